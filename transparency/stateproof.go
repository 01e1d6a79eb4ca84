package transparency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/statemap"
)

// StateProof is the answer of GET /v1/state/proof?key=K, which civnode state
// prove writes to a file (docs/state-proofs.md): one record of the node's
// state map, or its absence, with the proof that it is under a state root,
// and the commitment event that signs that root, held to a checkpoint.
type StateProof struct {
	Key string
	// Value is the RFC 8785 form of the record, the bytes the tree hashes;
	// nil for a key without a record.
	Value      []byte
	ThroughSeq uint64
	StateRoot  statemap.Hash
	Entries    uint64
	Proof      statemap.Proof
	// Commitment proves the state.committed event that signs StateRoot in
	// a checkpoint, as civnode transparency prove prints it.
	Commitment Proof
}

// stateProofJSON is the answer's JSON: every member required but
// key_hash and value_hash, and no other.
type stateProofJSON struct {
	Key        *string         `json:"key"`
	Value      json.RawMessage `json:"value"`
	ThroughSeq *uint64         `json:"through_seq"`
	StateRoot  *statemap.Hash  `json:"state_root"`
	Entries    *uint64         `json:"entries"`
	Siblings   json.RawMessage `json:"siblings"`
	KeyHash    json.RawMessage `json:"key_hash"`
	ValueHash  json.RawMessage `json:"value_hash"`
	Commitment json.RawMessage `json:"commitment"`
}

// ParseStateProof reads an answer of GET /v1/state/proof strictly: each
// member the format names (key_hash and value_hash together or not at all),
// no other, hashes in their one base64 spelling, nothing after the object.
// Its value is canonicalised (RFC 8785) as the tree hashes it, whatever its
// spacing or member order in the file. Every error is ErrBadStateProof.
func ParseStateProof(data []byte) (*StateProof, error) {
	bad := func(format string, args ...any) (*StateProof, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadStateProof}, args...)...)
	}
	var a stateProofJSON
	if err := decodeStrict(data, &a); err != nil {
		return bad("%v", err)
	}
	switch {
	case a.Key == nil:
		return bad("no key")
	case a.Value == nil:
		return bad("no value (null for a key without a record)")
	case a.ThroughSeq == nil || a.StateRoot == nil || a.Entries == nil:
		return bad("no through_seq, state_root or entries")
	case a.Siblings == nil:
		return bad("no siblings")
	case a.Commitment == nil || bytes.Equal(a.Commitment, []byte("null")):
		return bad("no commitment")
	}
	proofObj := map[string]json.RawMessage{"siblings": a.Siblings}
	if a.KeyHash != nil {
		proofObj["key_hash"] = a.KeyHash
	}
	if a.ValueHash != nil {
		proofObj["value_hash"] = a.ValueHash
	}
	pj, err := json.Marshal(proofObj)
	if err != nil {
		return bad("%v", err)
	}
	proof, err := statemap.ParseProof(pj)
	if err != nil {
		return bad("%v", err)
	}
	sp := &StateProof{Key: *a.Key, ThroughSeq: *a.ThroughSeq, StateRoot: *a.StateRoot, Entries: *a.Entries, Proof: proof}
	if !bytes.Equal(a.Value, []byte("null")) {
		if sp.Value, err = canonicalValue(a.Value); err != nil {
			return bad("value: %v", err)
		}
	}
	if err := decodeStrict(a.Commitment, &sp.Commitment); err != nil {
		return bad("commitment: %v", err)
	}
	if sp.Commitment.Event == nil {
		return bad("commitment: no event")
	}
	return sp, nil
}

// decodeStrict decodes one JSON value into v, refusing members v does not
// have and anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON value")
	}
	return nil
}

// canonicalValue is the RFC 8785 form of one JSON value, by the log's
// encoder. A record is an object, but a treasury's is a bare integer: a value
// of any kind is canonicalised as the one member of an object, whose JCS
// form is {"v":<JCS of the value>}. raw is one valid JSON value, as
// encoding/json hands a json.RawMessage over, so it cannot add members.
func canonicalValue(raw json.RawMessage) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not one JSON value")
	}
	wrapped := append(append([]byte(`{"v":`), raw...), '}')
	c, err := eventlog.CanonicalObject(wrapped)
	if err != nil {
		return nil, err
	}
	inner, ok := bytes.CutPrefix(c, []byte(`{"v":`))
	if !ok || len(inner) < 2 || inner[len(inner)-1] != '}' {
		return nil, fmt.Errorf("canonical form %q is not the value's", c)
	}
	return inner[:len(inner)-1], nil
}

// StateVerifyOptions are what a verifier trusts and requires.
type StateVerifyOptions struct {
	// VerifierKey is the node's note verifier key as the verifier trusts it:
	// the checkpoint must be signed by it, and the commitment event by the
	// same key, whatever key the answer names.
	VerifierKey string
	// Key, when set, is the key asked about: an answer of another is refused.
	Key string
	// Witnesses, when set, must have cosigned the checkpoint, Quorum of them
	// (at least 1), each no older than MaxAge (0: of any age, for a proof
	// checked long after it was made).
	Witnesses []string
	Quorum    int
	MaxAge    time.Duration
}

// StateVerified is what a verified answer shows.
type StateVerified struct {
	Key        string
	Value      []byte // the record's RFC 8785 form; nil for absence
	ThroughSeq uint64
	StateRoot  statemap.Hash
	Entries    uint64
	Seq        uint64 // the state.committed event's
	TreeSize   int64  // the checkpoint's
	Origin     string // the name of the key that signed the checkpoint
	Cosigned   int    // the required witnesses whose cosignature verifies
	Witnesses  int
}

// VerifyStateProof checks an answer of GET /v1/state/proof offline, all a
// verifier must: the record (or its absence) against the state root by the
// tree proof (statemap.Verify over the value's RFC 8785 form); the
// commitment event's id and signature by opts.VerifierKey's node, its
// inclusion in the checkpoint, the checkpoint's signature by that key, and
// with opts.Witnesses their cosignatures to a quorum; that the event is a
// state.committed whose payload {through_seq, state_root, entries} is the
// answer's; and, with opts.Key, that the answer is of that key. A refusal is
// ErrBadStateProof, with ErrAnotherKey for a checkpoint opts.VerifierKey did
// not sign and ErrNotWitnessed for a missing quorum; an unusable
// opts.VerifierKey or witness key is an error of neither.
func VerifyStateProof(data []byte, opts StateVerifyOptions) (StateVerified, error) {
	k, err := ParseKey(opts.VerifierKey)
	if err != nil {
		return StateVerified{}, err
	}
	sp, err := ParseStateProof(data)
	if err != nil {
		return StateVerified{}, err
	}
	return sp.Verify(k, opts)
}

// Verify is VerifyStateProof of a parsed answer, with the trusted key k.
func (sp *StateProof) Verify(k Key, opts StateVerifyOptions) (StateVerified, error) {
	bad := func(format string, args ...any) (StateVerified, error) {
		return StateVerified{}, fmt.Errorf("%w: "+format, append([]any{ErrBadStateProof}, args...)...)
	}
	if opts.Key != "" && sp.Key != opts.Key {
		return bad("the answer is of %s, not %s", sp.Key, opts.Key)
	}
	c := &sp.Commitment
	head, err := c.Verify(k)
	if err != nil {
		return bad("the commitment: %w", err)
	}
	v := StateVerified{Key: sp.Key, Value: sp.Value, ThroughSeq: sp.ThroughSeq, StateRoot: sp.StateRoot, Entries: sp.Entries,
		Seq: c.Seq, TreeSize: head.Size, Origin: k.Origin, Witnesses: len(opts.Witnesses)}
	if len(opts.Witnesses) > 0 {
		maxAge := opts.MaxAge
		if maxAge == 0 {
			maxAge = time.Duration(1<<63 - 1)
		}
		if err := checkWitnessed([]byte(c.Checkpoint), CheckOptions{Witnesses: opts.Witnesses, Quorum: opts.Quorum, MaxAge: maxAge}, time.Now()); err != nil {
			if errors.Is(err, ErrNotWitnessed) {
				return bad("the checkpoint is %w", err)
			}
			return StateVerified{}, err
		}
		v.Cosigned = len(requiredCosigners([]byte(c.Checkpoint), opts.Witnesses))
	}
	var ev struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(c.Event, &ev); err != nil {
		return bad("the commitment event: %v", err)
	}
	if ev.Type != events.TypeStateCommitted {
		return bad("the commitment event %d is a %s, not a %s", c.Seq, ev.Type, events.TypeStateCommitted)
	}
	var pl events.StateCommitted
	if err := decodeStrict(ev.Payload, &pl); err != nil {
		return bad("the payload of %s %d: %v", events.TypeStateCommitted, c.Seq, err)
	}
	if pl.ThroughSeq != sp.ThroughSeq || pl.StateRoot != sp.StateRoot.String() || pl.Entries != sp.Entries {
		return bad("the answer's through_seq %d, state_root %s, entries %d are not those %s %d signs: %d, %s, %d",
			sp.ThroughSeq, sp.StateRoot, sp.Entries, events.TypeStateCommitted, c.Seq, pl.ThroughSeq, pl.StateRoot, pl.Entries)
	}
	if sp.ThroughSeq >= c.Seq {
		return bad("%s %d commits to the state through seq %d, not before it", events.TypeStateCommitted, c.Seq, sp.ThroughSeq)
	}
	if err := statemap.Verify(sp.StateRoot, sp.Key, sp.Value, sp.Proof); err != nil {
		what := "record"
		if sp.Value == nil {
			what = "absence"
		}
		return bad("the %s of %s under the state root: %w", what, sp.Key, err)
	}
	return v, nil
}

// StateProofPath is the route of the state proof of key.
func StateProofPath(key string) string {
	return "/v1/state/proof?" + url.Values{"key": {key}}.Encode()
}

// stateNotCommittedRetries bounds how often FetchStateProof asks again a node
// that has no commitment yet (503 state_not_committed): one that just started
// commits within its --state-interval, a second by default.
const stateNotCommittedRetries = 30

// FetchStateProof fetches the answer of GET /v1/state/proof for key, as the
// node wrote it, asking again after a second while the node has no
// commitment yet. It checks nothing: VerifyStateProof does.
func FetchStateProof(ctx context.Context, c *Client, key string) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		b, err := c.get(ctx, StateProofPath(key))
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusForbidden {
			// answerError's message names the transparency endpoints' tokens,
			// which are not this route's.
			status := strings.TrimPrefix(se.msg, "the node at "+c.via+" refused the token for "+StateProofPath(key)+" ")
			status, _, _ = strings.Cut(status, "; the transparency endpoints")
			return nil, fmt.Errorf("the node at %s refused the token for the state proof of %s: it takes a token that may read the record's own route, the owner's or an agent's, not an observer's (%s)",
				c.via, key, strings.TrimSuffix(strings.TrimPrefix(status, "("), ")"))
		}
		if err == nil || attempt == stateNotCommittedRetries || !errors.As(err, &se) || se.code != http.StatusServiceUnavailable ||
			!bytes.Contains([]byte(se.msg), []byte("(state_not_committed)")) {
			return b, err
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}
