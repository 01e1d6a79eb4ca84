package commands

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Agent and observer tokens (docs/tokens.md): the owner issues them,
// rotates and revokes them; the HTTP layer turns a presented secret into an Actor
// through Authenticate. The owner token is not one of them: it lives in
// control.token and the HTTP layer checks it itself.
//
// A token's secret is shown once, when Create or Rotate returns it. Only its
// SHA-256 digest is stored; neither the secret nor the digest is ever audited,
// logged or put in an event. Token records are administrative state outside the
// chain (eventlog records of kind "token"), so issuing a token never appends an
// event; every change is audited as token.created, token.rotated or token.revoked.

// TokenStore keeps token records durably. *eventlog.Log satisfies it.
type TokenStore interface {
	PutRecord(kind, id string, value []byte) error
	Records(kind string) ([][]byte, error)
}

// TokenAuditor records administrative actions. *eventlog.Log satisfies it.
type TokenAuditor interface {
	Audit(ctx context.Context, action, actor string, detail any) (eventlog.AuditEntry, error)
}

// PublicIDResolver finds the identity of a public_id, with its controller
// binding (a token is not issued for an identity handed to another node), and
// the current public_id of an agent DID: a token acts for a DID, and slugs can
// change. The identities read model satisfies it.
type PublicIDResolver interface {
	IdentityBySlug(publicID string) (events.IdentityRef, bool, error)
	PublicIDOf(agentDID string) (publicID string, ok bool, err error)
}

// TokenRecordKind is the eventlog record kind token records are stored under.
const TokenRecordKind = "token"

// Token kinds as they appear in records, requests and responses.
const (
	TokenKindAgent    = "agent"
	TokenKindObserver = "observer"
)

// Token describes an issued token. It never holds the secret or its digest.
type Token struct {
	ID        string
	Kind      ActorKind // ActorAgent or ActorObserver
	PublicID  string    // the identity an agent token acts for; empty for observers
	AgentDID  string    // that identity's DID; empty for observers
	CreatedAt time.Time
	RotatedAt time.Time // zero until the first rotation
	RevokedAt time.Time // zero while the token works
}

// Revoked reports whether the token has been revoked.
func (t Token) Revoked() bool { return !t.RevokedAt.IsZero() }

// IssuedToken is a token with its secret, as Create and Rotate return it once.
type IssuedToken struct {
	Token
	Secret string
}

// TokensOptions configures NewTokens. Store, Auditor and NodeDID are required.
type TokensOptions struct {
	Store   TokenStore
	Auditor TokenAuditor
	// Identities resolves the public_id an agent token acts for. Without it no
	// agent token can be created.
	Identities PublicIDResolver
	// NodeDID is the audit actor of the node acting on its own behalf (an owner
	// Actor without a TokenID: the offline CLI, which holds the data dir).
	NodeDID string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Tokens manages agent and observer tokens. All methods are safe for concurrent
// use.
type Tokens struct {
	store      TokenStore
	auditor    TokenAuditor
	identities PublicIDResolver
	nodeDID    string
	now        func() time.Time

	// write serialises changes, so that two rotations of one token cannot both
	// win and the store and the maps below never disagree.
	write sync.Mutex
	mu    sync.RWMutex // guards the maps
	byID  map[string]*tokenRecord
	// active maps the digest of every working secret to its record. Revoked
	// tokens and replaced secrets are not in it, so they stop working the moment
	// the change is durable.
	active map[[sha256.Size]byte]*tokenRecord
}

// tokenRecord is the stored form of a token (record kind "token", keyed by id).
// Timestamps are eventlog.TimeLayout strings; null until set.
type tokenRecord struct {
	ID        string  `json:"id"`
	Kind      string  `json:"kind"`
	AgentDID  *string `json:"agent_did"`
	PublicID  *string `json:"public_id"`
	SHA256    string  `json:"sha256"` // hex of sha256(secret)
	CreatedAt string  `json:"created_at"`
	RotatedAt *string `json:"rotated_at"`
	RevokedAt *string `json:"revoked_at"`
}

// NewTokens loads every token record from the store. A record that does not
// decode stops the node rather than silently disabling a token.
func NewTokens(opts TokensOptions) (*Tokens, error) {
	if opts.Store == nil || opts.Auditor == nil {
		return nil, errors.New("new tokens: store and auditor are required")
	}
	if opts.NodeDID == "" {
		return nil, errors.New("new tokens: node DID is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t := &Tokens{
		store: opts.Store, auditor: opts.Auditor, identities: opts.Identities,
		nodeDID: opts.NodeDID, now: opts.Now,
		byID:   map[string]*tokenRecord{},
		active: map[[sha256.Size]byte]*tokenRecord{},
	}
	raws, err := opts.Store.Records(TokenRecordKind)
	if err != nil {
		return nil, fmt.Errorf("load tokens: %w", err)
	}
	for _, raw := range raws {
		rec, err := decodeTokenRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("load tokens: %w", err)
		}
		t.index(rec)
	}
	return t, nil
}

func decodeTokenRecord(raw []byte) (*tokenRecord, error) {
	var rec tokenRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("decode token record: %w", err)
	}
	if _, ok := parseTokenKind(rec.Kind); !ok || !validTokenID(rec.ID) {
		return nil, fmt.Errorf("token record %q: bad kind or id", rec.ID)
	}
	if _, err := rec.digest(); err != nil {
		return nil, fmt.Errorf("token record %s: %w", rec.ID, err)
	}
	return &rec, nil
}

func (r *tokenRecord) digest() ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	b, err := hex.DecodeString(r.SHA256)
	if err != nil || len(b) != sha256.Size {
		return d, errors.New("sha256 is not 64 hex digits")
	}
	copy(d[:], b)
	return d, nil
}

// index makes rec the current state of its token in memory. The caller holds
// write, or is NewTokens.
func (t *Tokens) index(rec *tokenRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byID[rec.ID]; ok {
		if d, err := old.digest(); err == nil {
			delete(t.active, d)
		}
	}
	t.byID[rec.ID] = rec
	if rec.RevokedAt == nil {
		d, _ := rec.digest() // checked when the record was made or decoded
		t.active[d] = rec
	}
}

// Authenticate returns the actor of a token secret. Only the secret's SHA-256
// digest is looked up: a map lookup is not constant-time, but its timing can only
// tell an attacker about digests of guesses they chose, never about a stored
// secret, and the final comparison is constant-time anyway.
func (t *Tokens) Authenticate(secret string) (Actor, bool) {
	if secret == "" {
		return Actor{}, false
	}
	d := sha256.Sum256([]byte(secret))
	t.mu.RLock()
	rec, ok := t.active[d]
	t.mu.RUnlock()
	if !ok {
		return Actor{}, false
	}
	stored, err := rec.digest()
	if err != nil || subtle.ConstantTimeCompare(stored[:], d[:]) != 1 {
		return Actor{}, false
	}
	kind, _ := parseTokenKind(rec.Kind)
	a := Actor{TokenID: rec.ID, Kind: kind}
	if rec.AgentDID != nil {
		a.AgentDID = *rec.AgentDID
	}
	return a, true
}

// List returns every token, revoked ones included, oldest first. Only the owner
// may list tokens.
func (t *Tokens) List(actor Actor) ([]Token, error) {
	if err := requireTokenOwner(actor, "list tokens"); err != nil {
		return nil, err
	}
	t.mu.RLock()
	out := make([]Token, 0, len(t.byID))
	for _, rec := range t.byID {
		out = append(out, rec.token())
	}
	t.mu.RUnlock()
	// The record keeps the slug the token was issued for; show the one the
	// identity has now.
	for i := range out {
		if out[i].AgentDID == "" || t.identities == nil {
			continue
		}
		current, ok, err := t.identities.PublicIDOf(out[i].AgentDID)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		if ok {
			out[i].PublicID = current
		}
	}
	slices.SortFunc(out, func(a, b Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// token is the public view of rec.
func (rec *tokenRecord) token() Token {
	kind, _ := parseTokenKind(rec.Kind)
	tk := Token{ID: rec.ID, Kind: kind, CreatedAt: parseTokenTime(&rec.CreatedAt),
		RotatedAt: parseTokenTime(rec.RotatedAt), RevokedAt: parseTokenTime(rec.RevokedAt)}
	if rec.PublicID != nil {
		tk.PublicID = *rec.PublicID
	}
	if rec.AgentDID != nil {
		tk.AgentDID = *rec.AgentDID
	}
	return tk
}

func parseTokenTime(s *string) time.Time {
	if s == nil {
		return time.Time{}
	}
	tm, err := time.Parse(eventlog.TimeLayout, *s)
	if err != nil {
		return time.Time{}
	}
	return tm
}

func (t *Tokens) stamp() string { return t.now().UTC().Format(eventlog.TimeLayout) }

// lookup returns a copy of the record of id, or token_not_found.
func (t *Tokens) lookup(id string) (tokenRecord, error) {
	t.mu.RLock()
	rec, ok := t.byID[id]
	t.mu.RUnlock()
	if !ok {
		return tokenRecord{}, NotFound("token_not_found", "", "no token with id %q", id)
	}
	return *rec, nil
}

// save stores rec durably and then makes it current in memory. The audit entry
// is written before save, so no change to a token ever goes unaudited; if save
// then fails, the entry names a change that did not happen, which is the safer
// of the two ways to be wrong.
func (t *Tokens) save(rec *tokenRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode token record: %w", err)
	}
	if err := t.store.PutRecord(TokenRecordKind, rec.ID, raw); err != nil {
		return fmt.Errorf("store token %s: %w", rec.ID, err)
	}
	t.index(rec)
	return nil
}

// tokenAuditDetail is the detail of token.* audit entries. It names the token by
// id and never holds its secret or digest.
type tokenAuditDetail struct {
	TokenID  string  `json:"token_id"`
	Kind     string  `json:"kind"`
	PublicID *string `json:"public_id"`
}

func (t *Tokens) audit(ctx context.Context, action string, actor Actor, rec *tokenRecord) error {
	detail := tokenAuditDetail{TokenID: rec.ID, Kind: rec.Kind, PublicID: rec.PublicID}
	if _, err := t.auditor.Audit(ctx, action, t.auditActor(actor), detail); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// auditActor names actor in audit entries (docs/api.md): "token:<id>" for a
// request, the node DID for the node acting on its own behalf.
func (t *Tokens) auditActor(a Actor) string {
	if a.TokenID == "" {
		return t.nodeDID
	}
	return "token:" + a.TokenID
}

func requireTokenOwner(a Actor, what string) error {
	if a.Kind != ActorOwner {
		return Forbidden("forbidden", "only the owner token may %s", what)
	}
	return nil
}

// parseTokenKind maps a record's or request's kind to the actor kind.
func parseTokenKind(s string) (ActorKind, bool) {
	switch s {
	case TokenKindAgent:
		return ActorAgent, true
	case TokenKindObserver:
		return ActorObserver, true
	}
	return 0, false
}

func tokenString(s string) *string { return &s }
