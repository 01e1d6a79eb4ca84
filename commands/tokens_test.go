package commands

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

var (
	tokOwner    = Actor{TokenID: "owner", Kind: ActorOwner, Governs: []string{"genesis"}}
	tokNodeSelf = Actor{Kind: ActorOwner} // the offline CLI
)

// tokIdentityMap stands in for the identities read model behind PublicIDResolver.
type tokIdentityMap map[string]string

func (m tokIdentityMap) IdentityBySlug(publicID string) (events.IdentityRef, bool, error) {
	did, ok := m[publicID]
	return events.IdentityRef{AgentDID: did, PublicID: publicID}, ok, nil
}

func (m tokIdentityMap) PublicIDOf(agentDID string) (string, bool, error) {
	for slug, did := range m {
		if did == agentDID {
			return slug, true, nil
		}
	}
	return "", false, nil
}

const tokAliceDID = "did:key:z6MkAlice"

func openTokenLog(t *testing.T) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{InMemory: true,
		Key:    ed25519.NewKeyFromSeed([]byte("civnode-commands-test-seed-32by!")),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newTestTokens(t *testing.T, l *eventlog.Log) *Tokens {
	t.Helper()
	ts, err := NewTokens(TokensOptions{Store: l, Auditor: l, NodeDID: l.NodeDID(),
		Identities: tokIdentityMap{"alice": tokAliceDID}})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func wantTokenError(t *testing.T, err error, kind Kind, code, field string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *commands.Error %s", err, code)
	}
	if ce.Kind != kind || ce.Code != code || ce.Field != field {
		t.Fatalf("err = %+v, want kind %d code %q field %q", ce, kind, code, field)
	}
}

func tokenAudit(t *testing.T, l *eventlog.Log, action string) []eventlog.AuditEntry {
	t.Helper()
	es, err := l.AuditEntries(eventlog.AuditQuery{Action: action, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

var (
	tokSecretPattern = regexp.MustCompile(`^cvn_[0-9a-f]{64}$`)
	tokIDPattern     = regexp.MustCompile(`^tok_[0-9a-f]{12}$`)
)

func TestTokensLifecycle(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	tip := l.Tip()

	obs, err := ts.Create(ctx, tokOwner, "observer", "")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := ts.Create(ctx, tokOwner, "agent", "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []IssuedToken{obs, agent} {
		if !tokSecretPattern.MatchString(it.Secret) || !tokIDPattern.MatchString(it.ID) {
			t.Errorf("secret %d chars, id %q: want cvn_ + 64 hex and tok_ + 12 hex", len(it.Secret), it.ID)
		}
		if it.CreatedAt.IsZero() || !it.RotatedAt.IsZero() || it.Revoked() {
			t.Errorf("new token %+v: want created_at only", it.Token)
		}
	}
	if obs.Secret == agent.Secret || obs.ID == agent.ID {
		t.Fatal("two tokens share a secret or an id")
	}
	if obs.Kind != ActorObserver || obs.PublicID != "" || obs.AgentDID != "" {
		t.Errorf("observer = %+v", obs.Token)
	}
	if agent.Kind != ActorAgent || agent.PublicID != "alice" || agent.AgentDID != tokAliceDID {
		t.Errorf("agent = %+v", agent.Token)
	}

	if a, ok := ts.Authenticate(obs.Secret); !ok || a.Kind != ActorObserver || a.TokenID != obs.ID || a.AgentDID != "" || a.Governs != nil {
		t.Errorf("observer authenticates as %+v, %v", a, ok)
	}
	if a, ok := ts.Authenticate(agent.Secret); !ok || a.Kind != ActorAgent || a.TokenID != agent.ID || a.AgentDID != tokAliceDID || a.Governs != nil {
		t.Errorf("agent authenticates as %+v, %v", a, ok)
	}
	for _, bad := range []string{"", "cvn_", agent.Secret[:len(agent.Secret)-1], agent.Secret + "0", strings.ToUpper(agent.Secret), agent.ID} {
		if a, ok := ts.Authenticate(bad); ok {
			t.Errorf("Authenticate(%q) = %+v", bad, a)
		}
	}

	// Rotation: the new secret works and the old one stops at once.
	rot, err := ts.Rotate(ctx, tokOwner, agent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rot.ID != agent.ID || rot.Secret == agent.Secret || !tokSecretPattern.MatchString(rot.Secret) || rot.RotatedAt.IsZero() || !rot.CreatedAt.Equal(agent.CreatedAt) {
		t.Errorf("rotated = %+v", rot.Token)
	}
	if _, ok := ts.Authenticate(agent.Secret); ok {
		t.Error("the replaced secret still authenticates")
	}
	if a, ok := ts.Authenticate(rot.Secret); !ok || a.TokenID != agent.ID || a.AgentDID != tokAliceDID {
		t.Errorf("rotated secret authenticates as %+v, %v", a, ok)
	}

	// Revocation: stops at once, stays listed.
	rev, err := ts.Revoke(ctx, tokOwner, obs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !rev.Revoked() {
		t.Errorf("revoked = %+v", rev)
	}
	if _, ok := ts.Authenticate(obs.Secret); ok {
		t.Error("a revoked token still authenticates")
	}
	list, err := ts.List(tokOwner)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != obs.ID || !list[0].Revoked() || list[1].ID != agent.ID || list[1].Revoked() || list[1].RotatedAt.IsZero() {
		t.Errorf("list = %+v", list)
	}

	// A revoked token cannot be rotated back; a second revoke changes nothing.
	_, err = ts.Rotate(ctx, tokOwner, obs.ID)
	wantTokenError(t, err, KindConflict, "invalid_state", "")
	again, err := ts.Revoke(ctx, tokOwner, obs.ID)
	if err != nil || !again.RevokedAt.Equal(rev.RevokedAt) {
		t.Errorf("second revoke = %+v, %v; want the first revocation", again, err)
	}
	if n := len(tokenAudit(t, l, "token.revoked")); n != 1 {
		t.Errorf("%d token.revoked entries, want 1", n)
	}

	for _, id := range []string{"tok_000000000000", "", "nope"} {
		_, err = ts.Rotate(ctx, tokOwner, id)
		wantTokenError(t, err, KindNotFound, "token_not_found", "")
		_, err = ts.Revoke(ctx, tokOwner, id)
		wantTokenError(t, err, KindNotFound, "token_not_found", "")
	}

	if got := l.Tip(); got != tip {
		t.Errorf("tip moved from %+v to %+v: token actions must not append events", tip, got)
	}
}

func TestTokensAudit(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	agent, err := ts.Create(ctx, tokOwner, "agent", "alice")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := ts.Create(ctx, tokNodeSelf, "observer", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Rotate(ctx, tokOwner, agent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Revoke(ctx, tokNodeSelf, obs.ID); err != nil {
		t.Fatal(err)
	}
	want := []struct{ action, actor, detail string }{
		{"token.created", "token:owner", `{"token_id":"` + agent.ID + `","kind":"agent","public_id":"alice"}`},
		{"token.created", l.NodeDID(), `{"token_id":"` + obs.ID + `","kind":"observer","public_id":null}`},
		{"token.rotated", "token:owner", `{"token_id":"` + agent.ID + `","kind":"agent","public_id":"alice"}`},
		{"token.revoked", l.NodeDID(), `{"token_id":"` + obs.ID + `","kind":"observer","public_id":null}`},
	}
	got := tokenAudit(t, l, "token.*")
	if len(got) != len(want) {
		t.Fatalf("audit = %+v, want %d entries", got, len(want))
	}
	for i, w := range want {
		if got[i].Action != w.action || got[i].Actor != w.actor || string(got[i].Detail) != w.detail {
			t.Errorf("entry %d = %s %s %s; want %s %s %s", i, got[i].Action, got[i].Actor, got[i].Detail, w.action, w.actor, w.detail)
		}
	}
}

// TestTokenSecretsNeverStored scans every stored record and every audit entry for
// every secret ever issued, and the audit entries and chain for the digests too.
func TestTokenSecretsNeverStored(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	var secrets []string
	for range 3 {
		a, err := ts.Create(ctx, tokOwner, "agent", "alice")
		if err != nil {
			t.Fatal(err)
		}
		o, err := ts.Create(ctx, tokOwner, "observer", "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := ts.Rotate(ctx, tokOwner, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ts.Revoke(ctx, tokOwner, o.ID); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, a.Secret, o.Secret, r.Secret)
	}
	recs, err := l.Records(TokenRecordKind)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6", len(recs))
	}
	var digests []string
	for _, raw := range recs {
		var rec tokenRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, rec.SHA256)
	}
	audit, err := json.Marshal(tokenAudit(t, l, ""))
	if err != nil {
		t.Fatal(err)
	}
	var chain strings.Builder
	if err := l.Scan(1, l.Tip().Seq, func(ev *eventlog.Event) error {
		chain.Write(ev.Raw())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		hexPart := strings.TrimPrefix(s, SecretPrefix)
		for _, raw := range recs {
			if strings.Contains(string(raw), hexPart) {
				t.Errorf("a stored record holds a secret: %s", raw)
			}
		}
		if strings.Contains(string(audit), hexPart) || strings.Contains(chain.String(), hexPart) {
			t.Error("the audit log or the chain holds a secret")
		}
	}
	for _, d := range digests {
		if strings.Contains(string(audit), d) || strings.Contains(chain.String(), d) {
			t.Error("the audit log or the chain holds a secret's digest")
		}
	}
}

// TestTokensSurviveRestart builds a second service over the same store, as a
// restarted node does.
func TestTokensSurviveRestart(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	kept, _ := ts.Create(ctx, tokOwner, "agent", "alice")
	rotated, _ := ts.Create(ctx, tokOwner, "observer", "")
	revoked, _ := ts.Create(ctx, tokOwner, "observer", "")
	fresh, err := ts.Rotate(ctx, tokOwner, rotated.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Revoke(ctx, tokOwner, revoked.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := ts.List(tokOwner)

	again := newTestTokens(t, l)
	if a, ok := again.Authenticate(kept.Secret); !ok || a.TokenID != kept.ID || a.Kind != ActorAgent || a.AgentDID != tokAliceDID {
		t.Errorf("kept token after restart: %+v, %v", a, ok)
	}
	if a, ok := again.Authenticate(fresh.Secret); !ok || a.TokenID != rotated.ID || a.Kind != ActorObserver {
		t.Errorf("rotated token after restart: %+v, %v", a, ok)
	}
	for _, s := range []string{rotated.Secret, revoked.Secret} {
		if _, ok := again.Authenticate(s); ok {
			t.Error("a replaced or revoked secret authenticates after restart")
		}
	}
	after, _ := again.List(tokOwner)
	if len(after) != len(before) {
		t.Fatalf("list after restart = %+v, want %+v", after, before)
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("token %d after restart = %+v, want %+v", i, after[i], before[i])
		}
	}
}

func TestTokensRefuseNonOwners(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	victim, _ := ts.Create(ctx, tokOwner, "observer", "")
	audited := len(tokenAudit(t, l, ""))
	for _, a := range []Actor{
		{TokenID: "tok_aaaaaaaaaaaa", Kind: ActorAgent, AgentDID: tokAliceDID},
		{TokenID: "tok_bbbbbbbbbbbb", Kind: ActorObserver},
		{},
	} {
		_, err := ts.Create(ctx, a, "observer", "")
		wantTokenError(t, err, KindForbidden, "forbidden", "")
		_, err = ts.Create(ctx, a, "agent", "alice")
		wantTokenError(t, err, KindForbidden, "forbidden", "")
		_, err = ts.Rotate(ctx, a, victim.ID)
		wantTokenError(t, err, KindForbidden, "forbidden", "")
		_, err = ts.Revoke(ctx, a, victim.ID)
		wantTokenError(t, err, KindForbidden, "forbidden", "")
		_, err = ts.List(a)
		wantTokenError(t, err, KindForbidden, "forbidden", "")
	}
	if _, ok := ts.Authenticate(victim.Secret); !ok {
		t.Error("a refused rotate or revoke changed the token")
	}
	if n := len(tokenAudit(t, l, "")); n != audited {
		t.Errorf("refused actions wrote %d audit entries", n-audited)
	}
	if recs, _ := l.Records(TokenRecordKind); len(recs) != 1 {
		t.Errorf("%d records after refused actions, want 1", len(recs))
	}
}

func TestTokensCreateValidation(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	noIdentities, err := NewTokens(TokensOptions{Store: l, Auditor: l, NodeDID: l.NodeDID()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		ts             *Tokens
		kind, publicID string
		errKind        Kind
		code, field    string
	}{
		{"no kind", ts, "", "", KindInvalid, "missing_field", "kind"},
		{"bad kind", ts, "admin", "", KindInvalid, "invalid_field", "kind"},
		{"owner kind", ts, "owner", "", KindInvalid, "invalid_field", "kind"},
		{"agent without identity", ts, "agent", "", KindInvalid, "missing_field", "acts_for"},
		{"agent for unknown identity", ts, "agent", "bob", KindNotFound, "identity_not_found", "acts_for"},
		{"agent without resolver", noIdentities, "agent", "alice", KindNotFound, "identity_not_found", "acts_for"},
		{"observer acting for someone", ts, "observer", "alice", KindInvalid, "invalid_field", "acts_for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.ts.Create(ctx, tokOwner, tc.kind, tc.publicID)
			wantTokenError(t, err, tc.errKind, tc.code, tc.field)
		})
	}
	if recs, _ := l.Records(TokenRecordKind); len(recs) != 0 {
		t.Errorf("%d records after refused creates", len(recs))
	}
	if es := tokenAudit(t, l, "token.*"); len(es) != 0 {
		t.Errorf("refused creates audited: %+v", es)
	}
}

// TestConcurrentRotations rotates one token from many goroutines: every rotation
// returns a secret, and exactly one secret works afterwards.
func TestConcurrentRotations(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	tok, _ := ts.Create(ctx, tokOwner, "observer", "")
	const n = 8
	secrets := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := ts.Rotate(ctx, tokOwner, tok.ID)
			if err != nil {
				t.Error(err)
				return
			}
			secrets[i] = r.Secret
			ts.Authenticate(r.Secret)
		})
	}
	wg.Wait()
	working := 0
	for _, s := range append(secrets, tok.Secret) {
		if _, ok := ts.Authenticate(s); ok {
			working++
		}
	}
	if working != 1 {
		t.Errorf("%d secrets work after %d rotations, want 1", working, n)
	}
}

// failingTokenAuditor refuses every entry, as a log in fail-stop does.
type failingTokenAuditor struct{}

func (failingTokenAuditor) Audit(context.Context, string, string, any) (eventlog.AuditEntry, error) {
	return eventlog.AuditEntry{}, errors.New("disk on fire")
}

// TestUnauditedChangeIsRefused: a change that cannot be audited does not happen.
func TestUnauditedChangeIsRefused(t *testing.T) {
	ctx := context.Background()
	l := openTokenLog(t)
	ts := newTestTokens(t, l)
	tok, _ := ts.Create(ctx, tokOwner, "observer", "")
	broken, err := NewTokens(TokensOptions{Store: l, Auditor: failingTokenAuditor{}, NodeDID: l.NodeDID(),
		Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broken.Create(ctx, tokOwner, "observer", ""); err == nil {
		t.Error("create without audit succeeded")
	}
	if _, err := broken.Rotate(ctx, tokOwner, tok.ID); err == nil {
		t.Error("rotate without audit succeeded")
	}
	if _, err := broken.Revoke(ctx, tokOwner, tok.ID); err == nil {
		t.Error("revoke without audit succeeded")
	}
	if _, ok := broken.Authenticate(tok.Secret); !ok {
		t.Error("failed changes disabled the token")
	}
	if recs, _ := l.Records(TokenRecordKind); len(recs) != 1 {
		t.Errorf("%d records, want the one good token", len(recs))
	}
}

func TestNewTokensRejectsBadRecords(t *testing.T) {
	for _, raw := range []string{
		`not json`,
		`{"id":"tok_000000000000","kind":"owner","sha256":"` + strings.Repeat("0", 64) + `","created_at":"x"}`,
		`{"id":"x","kind":"observer","sha256":"` + strings.Repeat("0", 64) + `","created_at":"x"}`,
		`{"id":"tok_000000000000","kind":"observer","sha256":"abc","created_at":"x"}`,
	} {
		l := openTokenLog(t)
		if err := l.PutRecord(TokenRecordKind, "tok_000000000000", []byte(raw)); err != nil {
			t.Fatal(err)
		}
		if _, err := NewTokens(TokensOptions{Store: l, Auditor: l, NodeDID: l.NodeDID()}); err == nil {
			t.Errorf("NewTokens accepted record %s", raw)
		}
	}
}

// TestTokenListShowsCurrentSlug: an agent token acts for a DID; after the
// identity changes its public_id, the list shows the new one.
func TestTokenListShowsCurrentSlug(t *testing.T) {
	l := openTokenLog(t)
	ids := tokIdentityMap{"alice": tokAliceDID}
	ts, err := NewTokens(TokensOptions{Store: l, Auditor: l, NodeDID: l.NodeDID(), Identities: ids})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Create(context.Background(), tokOwner, TokenKindAgent, "alice"); err != nil {
		t.Fatal(err)
	}
	delete(ids, "alice")
	ids["alice-renamed"] = tokAliceDID
	list, err := ts.List(tokOwner)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].PublicID != "alice-renamed" || list[0].AgentDID != tokAliceDID {
		t.Fatalf("list = %+v", list)
	}
}
