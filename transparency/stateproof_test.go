package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/statemap"
)

// stateFixture is a node's log holding a state.committed event for a small
// state map, from which answers of GET /v1/state/proof are made as the node
// makes them.
type stateFixture struct {
	t       *testing.T
	l       *eventlog.Log
	store   *statemap.MemStore
	values  map[string]string
	root    statemap.Hash
	entries uint64
	seq     uint64 // the state.committed event's
	through uint64
}

const adaKey = "identity/did:key:z6MkAda"

func newStateFixture(t *testing.T, key ed25519.PrivateKey) *stateFixture {
	t.Helper()
	f := &stateFixture{t: t, l: testLog(t, key, "state", 5), store: &statemap.MemStore{}, values: map[string]string{
		adaKey:             `{"agent_did":"did:key:z6MkAda","display_name":"Ada","stats":{"credit":7,"reputation":1}}`,
		"mission/m-1":      `{"id":"m-1","reward":{"agent_credit":7},"state":"settled"}`,
		"mission/m-2":      `{"id":"m-2","state":"open"}`,
		"treasury/genesis": `42`,
	}}
	var changes []statemap.Change
	for k, v := range f.values {
		changes = append(changes, statemap.Put(k, []byte(v)))
	}
	// Update takes a batch sorted by key hash.
	for i := range changes {
		for j := i + 1; j < len(changes); j++ {
			if string(changes[j].KeyHash[:]) < string(changes[i].KeyHash[:]) {
				changes[i], changes[j] = changes[j], changes[i]
			}
		}
	}
	var err error
	if f.root, f.entries, err = statemap.Update(f.store, f.store, changes); err != nil {
		t.Fatal(err)
	}
	f.through = f.l.Tip().Seq
	evs, err := f.l.Append(context.Background(), eventlog.Draft{Type: events.TypeStateCommitted,
		Payload: events.StateCommitted{ThroughSeq: f.through, StateRoot: f.root.String(), Entries: f.entries}})
	if err != nil {
		t.Fatal(err)
	}
	f.seq = evs[0].Seq
	appendNotes(t, f.l, "after", 3) // the checkpoint covers more than the commitment
	return f
}

// answer is the answer for key, as a map of its members to change.
func (f *stateFixture) answer(key string) map[string]any {
	t := f.t
	t.Helper()
	return f.answerAt(key, f.seq)
}

// answerAt is answer with the commitment proving the event at seq.
func (f *stateFixture) answerAt(key string, seq uint64) map[string]any {
	t := f.t
	t.Helper()
	p, err := statemap.Prove(f.store, statemap.HashKey(key))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Prove(context.Background(), LogSource(f.l, "test"), seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var value any
	if v, ok := f.values[key]; ok {
		value = json.RawMessage(v)
	}
	a := map[string]any{"key": key, "value": value, "through_seq": f.through, "state_root": f.root, "entries": f.entries,
		"siblings": p.Siblings, "commitment": json.RawMessage(cb)}
	if p.KeyHash != nil {
		a["key_hash"], a["value_hash"] = p.KeyHash, p.ValueHash
	}
	return a
}

func encode(t *testing.T, a map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// commitment is a's commitment as a map of its members to change.
func commitment(t *testing.T, a map[string]any) map[string]any {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal(a["commitment"].(json.RawMessage), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVerifyStateProof: an answer verifies with the node's key, for a
// record object, a bare integer and an absence, and in another spelling of
// the same value; and each thing a verifier checks refuses an answer that
// changed it.
func TestVerifyStateProof(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	f := newStateFixture(t, key)
	vkey := f.l.VerifierKey()
	opts := StateVerifyOptions{VerifierKey: vkey}

	for _, k := range []string{adaKey, "treasury/genesis", "mission/m-1", "mission/none"} {
		v, err := VerifyStateProof(encode(t, f.answer(k)), opts)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		want, ok := f.values[k]
		if v.Key != k || ok != (v.Value != nil) || string(v.Value) != want || v.Seq != f.seq || v.ThroughSeq != f.through ||
			v.StateRoot != f.root || v.Entries != f.entries || v.TreeSize != int64(f.l.TreeSize()) || !strings.HasPrefix(v.Origin, "civnode/did:key:") {
			t.Errorf("%s: verified %+v", k, v)
		}
	}

	// The value is hashed in its RFC 8785 form, whatever its spelling.
	a := f.answer(adaKey)
	a["value"] = json.RawMessage("{\n  \"stats\": {\"reputation\": 1, \"credit\": 7.0},\n  \"display_name\": \"Ada\", \"agent_did\": \"did:key:z6MkAda\"}")
	if _, err := VerifyStateProof(encode(t, a), opts); err != nil {
		t.Errorf("the value re-spelt: %v", err)
	}
	a = f.answer("treasury/genesis")
	a["value"] = json.RawMessage(" 4.2e1 ")
	if _, err := VerifyStateProof(encode(t, a), opts); err != nil {
		t.Errorf("the treasury re-spelt: %v", err)
	}

	_, otherKey, _ := ed25519.GenerateKey(nil)
	other := newStateFixture(t, otherKey)
	_, wkey, _ := ed25519.GenerateKey(nil)
	_, wvkey := cosign(t, f.l, wkey)

	refused := refusedStateAnswers(t, f, other, wvkey)
	for _, tc := range refused {
		_, err := VerifyStateProof(tc.answer(), tc.opts)
		if err == nil || !errors.Is(err, ErrBadStateProof) || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.is, tc.says)
		}
	}

	// The same answer with the witness's cosignature on its checkpoint
	// passes the quorum, and says how many cosigned.
	a = f.answer(adaKey)
	c := commitment(t, a)
	cosigned, _ := cosign(t, f.l, wkey)
	c["checkpoint"] = string(cosigned)
	a["commitment"] = json.RawMessage(encode(t, c))
	v, err := VerifyStateProof(encode(t, a), StateVerifyOptions{VerifierKey: vkey, Witnesses: []string{wvkey}, Quorum: 1})
	if err != nil || v.Cosigned != 1 || v.Witnesses != 1 {
		t.Errorf("witnessed: %+v, %v", v, err)
	}

	// A key that is not a node's is the caller's mistake, not a refusal.
	if _, err := VerifyStateProof(encode(t, f.answer(adaKey)), StateVerifyOptions{VerifierKey: wvkey}); err == nil || errors.Is(err, ErrBadStateProof) {
		t.Errorf("a witness key as the node's: %v", err)
	}
}

// refusedStateAnswer is an answer a verifier must refuse, with the options
// it is checked with, the error it is refused with and what that says.
type refusedStateAnswer struct {
	name   string
	answer func() []byte
	opts   StateVerifyOptions
	is     error
	says   string
}

// refusedStateAnswers are answers of f changed in each thing a verifier
// checks; other is another node's fixture, wvkey a witness that cosigned
// nothing.
func refusedStateAnswers(t *testing.T, f, other *stateFixture, wvkey string) []refusedStateAnswer {
	t.Helper()
	vkey := f.l.VerifierKey()
	opts := StateVerifyOptions{VerifierKey: vkey}
	return []refusedStateAnswer{
		{"a changed value", func() []byte {
			a := f.answer(adaKey)
			a["value"] = json.RawMessage(strings.Replace(f.values[adaKey], `"credit":7`, `"credit":8`, 1))
			return encode(t, a)
		}, opts, statemap.ErrProofMismatch, "the record of " + adaKey},
		{"a changed integer", func() []byte {
			a := f.answer("treasury/genesis")
			a["value"] = json.RawMessage(`43`)
			return encode(t, a)
		}, opts, statemap.ErrProofMismatch, "the record of treasury/genesis"},
		{"a record claimed absent", func() []byte {
			a := f.answer(adaKey)
			a["value"] = nil
			return encode(t, a)
		}, opts, statemap.ErrProofMismatch, "the absence of " + adaKey},
		{"an absence claimed a record", func() []byte {
			a := f.answer("mission/none")
			a["value"] = json.RawMessage(`{"id":"none"}`)
			return encode(t, a)
		}, opts, ErrBadStateProof, "the record of mission/none"},
		{"a changed sibling", func() []byte {
			a := f.answer(adaKey)
			sib := a["siblings"].([]statemap.Hash)
			sib[0][0] ^= 1
			return encode(t, a)
		}, opts, statemap.ErrProofMismatch, ""},
		{"another key's proof", func() []byte {
			a := f.answer("mission/m-2")
			a["key"], a["value"] = adaKey, json.RawMessage(f.values[adaKey])
			return encode(t, a)
		}, opts, statemap.ErrProofMismatch, ""},
		{"an answer of another key than asked", func() []byte { return encode(t, f.answer("mission/m-2")) },
			StateVerifyOptions{VerifierKey: vkey, Key: adaKey}, ErrBadStateProof, "the answer is of mission/m-2, not " + adaKey},
		{"a state root the event does not sign", func() []byte {
			a := f.answer(adaKey)
			root := f.root
			root[0] ^= 1
			a["state_root"] = root
			return encode(t, a)
		}, opts, ErrBadStateProof, "are not those state.committed"},
		{"entries the event does not sign", func() []byte {
			a := f.answer(adaKey)
			a["entries"] = f.entries + 1
			return encode(t, a)
		}, opts, ErrBadStateProof, "are not those state.committed"},
		{"a through_seq the event does not sign", func() []byte {
			a := f.answer(adaKey)
			a["through_seq"] = f.through - 1
			return encode(t, a)
		}, opts, ErrBadStateProof, "are not those state.committed"},
		{"another node's answer", func() []byte { return encode(t, other.answer(adaKey)) }, opts, ErrAnotherKey, ""},
		{"another node's checkpoint", func() []byte {
			a := f.answer(adaKey)
			c := commitment(t, a)
			c["checkpoint"] = commitment(t, other.answer(adaKey))["checkpoint"]
			a["commitment"] = json.RawMessage(encode(t, c))
			return encode(t, a)
		}, opts, ErrAnotherKey, ""},
		{"an event that is not a commitment", func() []byte { return encode(t, f.answerAt(adaKey, f.seq-1)) }, opts, ErrBadStateProof, "is a test.note, not a state.committed"},
		{"a changed commitment event", func() []byte {
			a := f.answer(adaKey)
			c := commitment(t, a)
			ev := c["event"].(map[string]any)
			ev["payload"].(map[string]any)["entries"] = float64(f.entries + 1)
			a["commitment"] = json.RawMessage(encode(t, c))
			a["entries"] = f.entries + 1
			return encode(t, a)
		}, opts, ErrBadStateProof, "is not the hash of its content"},
		{"a changed inclusion proof", func() []byte {
			a := f.answer(adaKey)
			c := commitment(t, a)
			p := c["proof"].([]any)
			h := f.root
			h[0] ^= 1
			p[0] = h.String()
			a["commitment"] = json.RawMessage(encode(t, c))
			return encode(t, a)
		}, opts, ErrBadStateProof, "does not lead to the checkpoint's root"},
		{"a missing witness quorum", func() []byte { return encode(t, f.answer(adaKey)) },
			StateVerifyOptions{VerifierKey: vkey, Witnesses: []string{wvkey}, Quorum: 1}, ErrNotWitnessed, "0 of 1 cosignatures"},
		{"a member the format does not have", func() []byte {
			a := f.answer(adaKey)
			a["note"] = "trust me"
			return encode(t, a)
		}, opts, ErrBadStateProof, "unknown field"},
		{"no value member", func() []byte {
			a := f.answer(adaKey)
			delete(a, "value")
			return encode(t, a)
		}, opts, ErrBadStateProof, "no value"},
		{"no commitment", func() []byte {
			a := f.answer(adaKey)
			delete(a, "commitment")
			return encode(t, a)
		}, opts, ErrBadStateProof, "no commitment"},
		{"a sibling in another spelling", func() []byte {
			a := f.answer(adaKey)
			sibs := make([]string, 0)
			for _, s := range a["siblings"].([]statemap.Hash) {
				sibs = append(sibs, strings.TrimRight(s.String(), "="))
			}
			a["siblings"] = sibs
			return encode(t, a)
		}, opts, ErrBadStateProof, ""},
	}
}

// TestCanonicalValue: a value of any JSON kind is canonicalised as RFC 8785
// writes it, and what is not one JSON value is refused.
func TestCanonicalValue(t *testing.T) {
	for in, want := range map[string]string{
		`42`:                     `42`,
		` -0 `:                   `0`,
		`1.50`:                   `1.5`,
		`"a\u0062"`:              `"ab"`,
		`[3, {"b":1,"a":2}]`:     `[3,{"a":2,"b":1}]`,
		`{"z":null,"a":true}`:    `{"a":true,"z":null}`,
		`{"v":{"v":1}}`:          `{"v":{"v":1}}`,
		`1e2`:                    `100`,
		"{\n\"x\" : \"\u00e9\"}": `{"x":"é"}`,
	} {
		got, err := canonicalValue(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("canonicalValue(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`1,"a":2`, `1}`, ``, `{"a":1`} {
		if got, err := canonicalValue(json.RawMessage(in)); err == nil {
			t.Errorf("canonicalValue(%q) = %q, want an error", in, got)
		}
	}
}

// jsStateVerifier is the state proof verifier written apart from this
// package, in JavaScript with Node's crypto alone, for verifiers to copy.
const jsStateVerifier = "../docs/examples/verify-state-proof.mjs"

// runJSStateVerifier runs the JavaScript verifier on answer with opts and
// returns its output and exit code.
func runJSStateVerifier(t *testing.T, node string, answer []byte, opts StateVerifyOptions) (string, int) {
	t.Helper()
	// Reading the scripts makes them inputs of this test for go test's
	// cache, which does not see what node reads.
	for _, script := range []string{jsStateVerifier, "../docs/examples/check-inclusion.mjs"} {
		if _, err := os.ReadFile(script); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{jsStateVerifier, "-", opts.VerifierKey}
	for _, w := range opts.Witnesses {
		args = append(args, "--witness", w)
	}
	if opts.Quorum > 0 {
		args = append(args, "--quorum", strconv.Itoa(opts.Quorum))
	}
	if opts.Key != "" {
		args = append(args, "--key", opts.Key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Stdin = bytes.NewReader(answer)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("run %s: %v", jsStateVerifier, err)
	return "", 0
}

// TestJSVerifyStateAnswer: the JavaScript verifier accepts what
// VerifyStateProof accepts, with the same ok line as civnode state verify
// prints, and refuses, with exit 1 and an invalid: line, every answer that
// VerifyStateProof refuses.
func TestJSVerifyStateAnswer(t *testing.T) {
	node := testtool.Need(t, "node", "install Node.js 20 or later")
	_, key, _ := ed25519.GenerateKey(nil)
	f := newStateFixture(t, key)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	other := newStateFixture(t, otherKey)
	_, wkey, _ := ed25519.GenerateKey(nil)
	_, wvkey := cosign(t, f.l, wkey)
	opts := StateVerifyOptions{VerifierKey: f.l.VerifierKey()}

	witnessed := f.answer(adaKey)
	c := commitment(t, witnessed)
	cosigned, _ := cosign(t, f.l, wkey)
	c["checkpoint"] = string(cosigned)
	witnessed["commitment"] = json.RawMessage(encode(t, c))
	respelt := f.answer(adaKey)
	respelt["value"] = json.RawMessage(`{"stats":{"reputation":1,"credit":7.0},"display_name":"Ada","agent_did":"did:key:z6MkAda"}`)
	for _, tc := range []struct {
		name   string
		answer []byte
		opts   StateVerifyOptions
		says   string
	}{
		{"a record", encode(t, f.answer(adaKey)), opts, "ok: " + adaKey + " = " + f.values[adaKey][:59] + "… through seq "},
		{"a treasury", encode(t, f.answer("treasury/genesis")), opts, "ok: treasury/genesis = 42 through seq "},
		{"an absence", encode(t, f.answer("mission/none")), opts, "ok: mission/none = absent through seq "},
		{"a record re-spelt", encode(t, respelt), StateVerifyOptions{VerifierKey: opts.VerifierKey, Key: adaKey}, "ok: " + adaKey},
		{"a witnessed checkpoint", encode(t, witnessed), StateVerifyOptions{VerifierKey: opts.VerifierKey, Witnesses: []string{wvkey}, Quorum: 1}, ", witnessed by 1 of 1\n"},
	} {
		v, err := VerifyStateProof(tc.answer, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := fmt.Sprintf("through seq %d, root %s, in the tree of %d events signed by %s", v.ThroughSeq, v.StateRoot, v.TreeSize, v.Origin)
		out, code := runJSStateVerifier(t, node, tc.answer, tc.opts)
		if code != 0 || !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, tc.says) || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, %q; want %q and %q", tc.name, code, out, tc.says, want)
		}
	}
	for _, tc := range refusedStateAnswers(t, f, other, wvkey) {
		answer := tc.answer()
		if _, err := VerifyStateProof(answer, tc.opts); err == nil {
			t.Fatalf("%s: VerifyStateProof accepts it", tc.name)
		}
		if out, code := runJSStateVerifier(t, node, answer, tc.opts); code != 1 || !strings.HasPrefix(out, "invalid: ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d, %q; want 1 and one invalid: line", tc.name, code, out)
		}
	}
}
