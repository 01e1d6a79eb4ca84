package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/statemap"
	"github.com/civnode/civnode/witness"
)

// commitState does what the node's state committer does in one round
// (cmd/civnode/internal/localnode/statecommit.go), which the test server
// does not run: it brings the state tree up to the durable tip and, when
// its root changed, appends state.committed with the root and writes the
// tree as signed by it; when it did not, it writes the tree through the tip
// as signed by the commitment before. It returns the commitment's seq.
func commitState(t *testing.T, l *eventlog.Log) uint64 {
	t.Helper()
	v, err := l.DerivedView()
	if err != nil {
		t.Fatal(err)
	}
	last, err := projections.StateTreeCommit(v)
	v.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err := projections.PrepareState(l, l.Tip().Seq)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if last.CommitmentSeq != 0 && r.Root == last.Root && r.Entries == last.Entries {
		if err := r.Commit(last.CommitmentSeq); err != nil {
			t.Fatal(err)
		}
		return last.CommitmentSeq
	}
	evs, err := l.Append(t.Context(), eventlog.Draft{Type: events.TypeStateCommitted, Payload: events.StateCommitted{
		ThroughSeq: r.ThroughSeq, StateRoot: r.Root.String(), Entries: r.Entries}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(evs[0].Seq); err != nil {
		t.Fatal(err)
	}
	return evs[0].Seq
}

// stateProofAnswer is GET /v1/state/proof as a verifier reads it.
type stateProofAnswer struct {
	Key        string          `json:"key"`
	Value      json.RawMessage `json:"value"`
	ThroughSeq uint64          `json:"through_seq"`
	StateRoot  statemap.Hash   `json:"state_root"`
	Entries    uint64          `json:"entries"`
	statemap.Proof
	Commitment struct {
		Checkpoint  string          `json:"checkpoint"`
		VerifierKey string          `json:"verifier_key"`
		Seq         uint64          `json:"seq"`
		EventID     string          `json:"event_id"`
		LeafIndex   int64           `json:"leaf_index"`
		LeafHash    tlog.Hash       `json:"leaf_hash"`
		TreeSize    int64           `json:"tree_size"`
		RootHash    tlog.Hash       `json:"root_hash"`
		Proof       []tlog.Hash     `json:"proof"`
		Event       json.RawMessage `json:"event"`
	} `json:"commitment"`
}

// stateProof asks for key's proof with token and decodes a 200.
func stateProof(t *testing.T, n *testNode, key, token string) (stateProofAnswer, response) {
	t.Helper()
	r := n.request(http.MethodGet, "/v1/state/proof?key="+url.QueryEscape(key), token, nil)
	var a stateProofAnswer
	r.wantOK(t, &a)
	return a, r
}

// value is the answer's value as the verifier hashes it: nil for null.
func (a stateProofAnswer) value() []byte {
	if bytes.Equal(a.Value, []byte("null")) {
		return nil
	}
	return a.Value
}

// verifyStateProof checks a as an offline verifier does (docs/state-proofs.md),
// trusting only the node's own key: the tree proof against state_root, the
// commitment event (its stored bytes, id and signature), its payload against
// the answer, its inclusion in the checkpoint, and the checkpoint's signature.
func verifyStateProof(t *testing.T, n *civNode, key string, a stateProofAnswer) {
	t.Helper()
	if a.Key != key {
		t.Errorf("key %q, asked for %q", a.Key, key)
	}
	if err := statemap.Verify(a.StateRoot, key, a.value(), a.Proof); err != nil {
		t.Errorf("%s: the tree proof does not verify: %v", key, err)
	}
	c := a.Commitment

	// The event: exactly as stored, its id and signature the node's.
	stored, err := n.log.Event(c.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Event, stored.Raw()) {
		t.Errorf("the commitment event is not the stored bytes:\n%s\n%s", c.Event, stored.Raw())
	}
	var ev struct {
		ID        string          `json:"id"`
		Seq       uint64          `json:"seq"`
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
		Signature string          `json:"signature"`
	}
	if err := json.Unmarshal(c.Event, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != events.TypeStateCommitted || ev.Seq != c.Seq || ev.ID != c.EventID {
		t.Errorf("commitment event %s at %d id %s; the answer says seq %d id %s", ev.Type, ev.Seq, ev.ID, c.Seq, c.EventID)
	}
	u := stored.SignedBytes()
	if sum := sha256.Sum256(u); hex.EncodeToString(sum[:]) != ev.ID {
		t.Errorf("event id %s is not SHA-256 of its signed bytes", ev.ID)
	}
	sig, err := base64.StdEncoding.DecodeString(ev.Signature)
	if err != nil || !ed25519.Verify(n.key.Public().(ed25519.PublicKey), u, sig) {
		t.Errorf("the commitment event's signature does not verify with the node key (%v)", err)
	}

	// Its payload is the answer's root.
	var p events.StateCommitted
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.ThroughSeq != a.ThroughSeq || p.StateRoot != a.StateRoot.String() || p.Entries != a.Entries {
		t.Errorf("payload %+v, answer through_seq %d state_root %s entries %d", p, a.ThroughSeq, a.StateRoot, a.Entries)
	}

	// Its inclusion in the checkpoint's tree.
	id, err := hex.DecodeString(c.EventID)
	if err != nil {
		t.Fatal(err)
	}
	leaf := tlog.RecordHash(id)
	if leaf != c.LeafHash || c.LeafIndex != int64(c.Seq)-1 {
		t.Errorf("leaf %s at %d, want %s at %d", c.LeafHash, c.LeafIndex, leaf, c.Seq-1)
	}
	if err := tlog.CheckRecord(c.Proof, c.TreeSize, c.RootHash, c.LeafIndex, leaf); err != nil {
		t.Errorf("the inclusion proof does not verify: %v", err)
	}

	// The checkpoint, signed by the key the verifier trusts (the node's, not
	// the one in the answer), names that tree.
	v, err := note.NewVerifier(n.log.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Open([]byte(c.Checkpoint), note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if want := eventlog.CheckpointText(n.log.Origin(), eventlog.TreeHead{Size: c.TreeSize, Root: c.RootHash}); signed.Text != want {
		t.Errorf("checkpoint text %q, want %q", signed.Text, want)
	}
	if c.VerifierKey != n.log.VerifierKey() {
		t.Errorf("verifier_key %q, the node's %q", c.VerifierKey, n.log.VerifierKey())
	}
}

// TestStateProofBeforeCommitment: until a state.committed signs the tree,
// the node answers 503 state_not_committed with Retry-After: 1, and a round
// that has no commitment yet (written with none) changes nothing.
func TestStateProofBeforeCommitment(t *testing.T) {
	w := newMissionWorld(t)
	key := "identity/" + w.dids["ada"]
	r := w.get("/v1/state/proof?key=" + url.QueryEscape(key))
	r.wantError(t, http.StatusServiceUnavailable, codeStateNotCommitted, "")
	if ra := r.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}

	round, err := projections.PrepareState(w.log, w.log.Tip().Seq)
	if err != nil {
		t.Fatal(err)
	}
	if err := round.Commit(0); err != nil {
		t.Fatal(err)
	}
	w.get("/v1/state/proof?key="+url.QueryEscape(key)).wantError(t, http.StatusServiceUnavailable, codeStateNotCommitted, "")

	seq := commitState(t, w.log)
	a, _ := stateProof(t, w.testNode, key, testToken)
	if a.Commitment.Seq != seq {
		t.Errorf("commitment seq %d, want %d", a.Commitment.Seq, seq)
	}
	verifyStateProof(t, w.civNode, key, a)
}

// TestStateProofMembership: an identity's and a mission's records are
// proved against the root of the newest commitment, which the answer
// carries signed and included in the node's checkpoint; the value is the
// record its own route answers. The node is quiet after the commitment: the
// answer must show it without another event.
func TestStateProofMembership(t *testing.T) {
	w := newMissionWorld(t)
	m := w.advance("claimed")
	seq := commitState(t, w.log)

	ada := w.dids["ada"]
	identity := "identity/" + ada
	a, r := stateProof(t, w.testNode, identity, testToken)
	if a.Commitment.Seq != seq || a.ThroughSeq != seq-1 {
		t.Errorf("commitment at %d through %d, want %d through %d", a.Commitment.Seq, a.ThroughSeq, seq, seq-1)
	}
	if a.value() == nil || a.KeyHash != nil || a.ValueHash != nil {
		t.Fatalf("membership answer %s", r.body)
	}
	verifyStateProof(t, w.civNode, identity, a)
	rec := w.get("/v1/civilization/public-identity?agent_did=" + url.QueryEscape(ada))
	rec.wantOK(t, nil)
	if !sameJSON(t, a.Value, rec.body) {
		t.Errorf("the identity's value %s, its route's answer %s", a.Value, rec.body)
	}
	if want, ok, err := projections.StateValue(w.log, identity); err != nil || !ok || !bytes.Equal(a.value(), want) {
		t.Errorf("value %s, the stored JCS bytes %s (%v %v)", a.Value, want, ok, err)
	}
	if got := jsonKeys(t, r.body); !reflect.DeepEqual(got, []string{"key", "value", "through_seq", "state_root", "entries", "siblings", "commitment"}) {
		t.Errorf("members %v", got)
	}
	if got := jsonKeys(t, mustMember(t, r.body, "commitment")); !reflect.DeepEqual(got, []string{"checkpoint", "verifier_key", "seq",
		"event_id", "leaf_index", "leaf_hash", "tree_size", "root_hash", "proof", "event"}) {
		t.Errorf("commitment members %v", got)
	}

	// The same answer for the identity's own agent token; the mission's too.
	mission := "mission/" + m.MissionID
	b, _ := stateProof(t, w.testNode, mission, w.tokens["ada"])
	verifyStateProof(t, w.civNode, mission, b)
	rec = w.get("/v1/core/missions/" + m.MissionID)
	rec.wantOK(t, nil)
	if !sameJSON(t, b.Value, rec.body) {
		t.Errorf("the mission's value %s, its route's answer %s", b.Value, rec.body)
	}
	if b.StateRoot != a.StateRoot || b.Commitment.Seq != seq {
		t.Errorf("two keys of one commitment: roots %s %s, seqs %d %d", a.StateRoot, b.StateRoot, a.Commitment.Seq, b.Commitment.Seq)
	}

	// A tampered value, or the proof under another key, does not verify:
	// the check above can fail.
	if err := statemap.Verify(a.StateRoot, identity, []byte(strings.Replace(string(a.Value), `"`, `'`, 1)), a.Proof); err == nil {
		t.Error("a tampered value verifies")
	}
	if err := statemap.Verify(a.StateRoot, mission, a.value(), a.Proof); err == nil {
		t.Error("the identity's proof verifies for the mission's key")
	}

	// The mission moves on and the next commitment proves its new state,
	// while the answer before it stays a valid proof of the old root.
	w.step(m.MissionID, "complete", w.tokens["ada"], map[string]any{"result": "done"}).wantOK(t, nil)
	next := commitState(t, w.log)
	c, _ := stateProof(t, w.testNode, mission, testToken)
	verifyStateProof(t, w.civNode, mission, c)
	if c.Commitment.Seq != next || c.StateRoot == b.StateRoot || !strings.Contains(string(c.Value), `"state":"completed"`) {
		t.Errorf("after completing: commitment %d (want %d), root %s (was %s), value %s", c.Commitment.Seq, next, c.StateRoot, b.StateRoot, c.Value)
	}
	if err := statemap.Verify(b.StateRoot, mission, b.value(), b.Proof); err != nil {
		t.Errorf("the older proof no longer verifies against its own root: %v", err)
	}
}

// TestStateProofUnchangedRound: a round that finds the root unchanged
// moves the tree past the events that changed nothing and keeps the
// commitment signed before; the answer's through_seq stays the one that
// commitment's payload signs, which a verifier compares with.
func TestStateProofUnchangedRound(t *testing.T) {
	w := newMissionWorld(t)
	seq := commitState(t, w.log)
	w.appendEvents("test.event", "test.event")
	if again := commitState(t, w.log); again != seq {
		t.Fatalf("a round that changed nothing appended a commitment at %d", again)
	}
	v, err := w.log.DerivedView()
	if err != nil {
		t.Fatal(err)
	}
	c, err := projections.StateTreeCommit(v)
	v.Close()
	if err != nil || c.ThroughSeq != w.log.Tip().Seq || c.CommitmentSeq != seq {
		t.Fatalf("the tree's commit %+v (%v), want through the tip %d signed at %d", c, err, w.log.Tip().Seq, seq)
	}
	key := "identity/" + w.dids["pub"]
	a, _ := stateProof(t, w.testNode, key, testToken)
	if a.ThroughSeq != seq-1 || a.Commitment.Seq != seq {
		t.Errorf("through_seq %d signed at %d, want %d at %d", a.ThroughSeq, a.Commitment.Seq, seq-1, seq)
	}
	verifyStateProof(t, w.civNode, key, a)
}

// mustMember is one member of a JSON object, raw.
func mustMember(t *testing.T, body []byte, name string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[name]
}

// TestStateProofAbsence: a mission no one published is a 200 with value
// null and a proof of its absence, which a made-up value does not pass.
func TestStateProofAbsence(t *testing.T) {
	w := newMissionWorld(t)
	w.advance("created")
	commitState(t, w.log)
	for _, key := range []string{"mission/00000000-0000-4000-8000-000000000000", "identity/did:key:z6MkNobody",
		"treasury/nowhere", "mission/a\x00b"} {
		a, r := stateProof(t, w.testNode, key, testToken)
		if a.value() != nil || !bytes.Contains(r.body, []byte(`"value":null`)) {
			t.Fatalf("%q: %s", key, r.body)
		}
		verifyStateProof(t, w.civNode, key, a)
		if err := statemap.Verify(a.StateRoot, key, []byte(`{}`), a.Proof); err == nil {
			t.Errorf("%q: the absence proof verifies a value", key)
		}
	}
}

// TestStateProofRefusals: the key is validated before anything is read, and
// the route admits the tokens of the records' own routes.
func TestStateProofRefusals(t *testing.T) {
	w := newMissionWorld(t)
	commitState(t, w.log)
	for _, q := range []string{"", "key=", "key=identity", "key=identity%2F", "key=%2Fx", "key=nope%2Fx",
		"key=Identity%2Fx", "key=mission%2F%FF", "key=mission%2F" + strings.Repeat("a", maxStateKeyBytes)} {
		w.get("/v1/state/proof?"+q).wantError(t, http.StatusBadRequest, codeInvalidField, "key")
	}
	w.get("/v1/state/proof?key=mission%2F"+strings.Repeat("a", maxStateKeyBytes-len("mission/"))).wantOK(t, nil)
	w.get("/v1/state/proof?key=mission%2Fx&key=mission%2Fy").wantError(t, http.StatusBadRequest, codeInvalidQuery, "key")
	w.get("/v1/state/proof?key=mission%2Fx&tree_size=3").wantError(t, http.StatusBadRequest, codeInvalidQuery, "tree_size")

	path := "/v1/state/proof?key=mission%2Fx"
	w.request(http.MethodGet, path, "", nil).wantError(t, http.StatusUnauthorized, codeUnauthorized, "")
	if r := w.request(http.MethodGet, path, w.observerToken(), nil); r.status != http.StatusForbidden {
		t.Errorf("observer token: %d %s, want 403", r.status, r.body)
	}
	w.request(http.MethodGet, path, w.tokens["rover"], nil).wantOK(t, nil)
}

// TestStateProofWitnessed: with witnesses, the commitment is proved in the
// newest witnessed checkpoint, cosignatures included, never in a newer
// checkpoint of the node's own; while no witnessed checkpoint covers the
// commitment the answer is 503 state_not_committed.
func TestStateProofWitnessed(t *testing.T) {
	key := ed25519.NewKeyFromSeed(testSeed)
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()}, core.Config{Governs: []string{"genesis"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	// A witness of the node's log, over HTTP, and the node's submitter to it.
	wkey, err := witness.DeriveKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	wit, err := witness.New(witness.Options{Key: wkey, Name: "witness.example/state-proof", Logs: []string{c.Log.VerifierKey()},
		StatePath: filepath.Join(t.TempDir(), "witness.json")})
	if err != nil {
		t.Fatal(err)
	}
	ws := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cs, err := wit.AddCheckpoint(body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		io.WriteString(rw, cs.Line)
	}))
	t.Cleanup(ws.Close)
	remote, err := witness.ParseRemote(wit.VerifierKey() + "@" + ws.URL)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := witness.NewSubmitter(witness.SubmitterOptions{Log: c.Log, Witnesses: []witness.Remote{remote}, Quorum: 1,
		StatePath: filepath.Join(t.TempDir(), "cosignatures.json"), Interval: 20 * time.Millisecond, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s := New(wired(Options{OwnerToken: testToken, Logger: discardLogger(), Governs: []string{"genesis"}, Witnesses: sub}, c))
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	n := &civNode{core: c, key: key, read: c.Identities, mread: c.Missions, gread: c.GameState,
		cmd: c.Identity, mcmd: c.Mission, gcmd: c.Game, tokens: c.Tokens,
		testNode: &testNode{t: t, log: c.Log, srv: s, url: hs.URL}}
	did, _ := n.bootstrap(map[string]any{"display_name": "Ada", "public_id": "ada"})
	seq := commitState(t, c.Log)

	// The submitter has not run: nothing is witnessed.
	k := "identity/" + did
	r := n.get("/v1/state/proof?key=" + url.QueryEscape(k))
	r.wantError(t, http.StatusServiceUnavailable, codeStateNotCommitted, "")
	if ra := r.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); sub.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for wc := sub.Witnessed(); wc == nil || wc.TreeSize < int64(seq); wc = sub.Witnessed() {
		if time.Now().After(deadline) {
			t.Fatalf("no witnessed checkpoint covers seq %d: %+v", seq, sub.Statuses())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	wc := sub.Witnessed()
	// The node's own checkpoint moves past the witnessed one.
	n.appendEvents("test.event")

	a, _ := stateProof(t, n.testNode, k, testToken)
	verifyStateProof(t, n, k, a)
	if a.Commitment.Checkpoint != wc.Checkpoint || a.Commitment.TreeSize != wc.TreeSize {
		t.Errorf("checkpoint of %d events %q, want the witnessed one of %d %q", a.Commitment.TreeSize, a.Commitment.Checkpoint, wc.TreeSize, wc.Checkpoint)
	}
	if a.Commitment.TreeSize >= c.Log.TreeSize() {
		t.Errorf("tree_size %d: the witnessed checkpoint should be behind the node's %d", a.Commitment.TreeSize, c.Log.TreeSize())
	}
	nv, err := note.NewVerifier(c.Log.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	cv, err := witness.NewCosignatureVerifier(wit.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Open([]byte(a.Commitment.Checkpoint), note.VerifierList(nv, cv))
	if err != nil || len(signed.Sigs) != 2 {
		t.Errorf("the witnessed checkpoint: %v, %d signatures verified, want the node's and the witness's", err, len(signed.Sigs))
	}
}

// TestStateProofDocExample holds the captured answer of docs/state-proofs.md
// to the checks a verifier makes, but the event's signature, whose signed
// bytes the eventlog package computes: the tree proof folds the value to the
// root, the commitment's payload is the answer's root, and the event is in
// the checkpoint its own verifier key signs.
func TestStateProofDocExample(t *testing.T) {
	var a stateProofAnswer
	dec := json.NewDecoder(strings.NewReader(markdownBlock(t, filepath.Join("..", "docs", "state-proofs.md"), "answer-example")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := statemap.Verify(a.StateRoot, a.Key, a.value(), a.Proof); err != nil {
		t.Errorf("the tree proof: %v", err)
	}
	c := a.Commitment
	var ev struct {
		ID      string                `json:"id"`
		Seq     uint64                `json:"seq"`
		Type    string                `json:"type"`
		Payload events.StateCommitted `json:"payload"`
	}
	if err := json.Unmarshal(c.Event, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != events.TypeStateCommitted || ev.Seq != c.Seq || ev.ID != c.EventID ||
		ev.Payload != (events.StateCommitted{ThroughSeq: a.ThroughSeq, StateRoot: a.StateRoot.String(), Entries: a.Entries}) {
		t.Errorf("the commitment event %+v does not sign the answer's root", ev)
	}
	id, err := hex.DecodeString(c.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if leaf := tlog.RecordHash(id); leaf != c.LeafHash || tlog.CheckRecord(c.Proof, c.TreeSize, c.RootHash, c.LeafIndex, leaf) != nil {
		t.Errorf("the inclusion proof does not verify")
	}
	v, err := note.NewVerifier(c.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Open([]byte(c.Checkpoint), note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if want := eventlog.CheckpointText(v.Name(), eventlog.TreeHead{Size: c.TreeSize, Root: c.RootHash}); signed.Text != want {
		t.Errorf("checkpoint text %q, want %q", signed.Text, want)
	}
}

// markdownBlock is the text of the fenced code block of the markdown file at
// path whose info string names it (```json name).
func markdownBlock(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	open, inside, found := false, false, false
	for line := range strings.Lines(string(b)) {
		switch {
		case !open && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			open, inside = true, len(info) >= 2 && info[1] == name
			found = found || inside
		case open && strings.HasPrefix(strings.TrimSpace(line), "```"):
			open, inside = false, false
		case inside:
			body.WriteString(line)
		}
	}
	if !found {
		t.Fatalf("%s has no block named %s", path, name)
	}
	return body.String()
}

// TestStateProofOnAMirror: a mirror keeps no state tree today, so it
// answers 503 state_not_committed and says why; a server without the read
// models has no tree to prove from and does not serve the route.
func TestStateProofOnAMirror(t *testing.T) {
	w := newCivNodeServing(t, nil, func(o *Options) { o.Mirror = &fakeMirror{} })
	r := w.get("/v1/state/proof?key=mission%2Fx")
	r.wantError(t, http.StatusServiceUnavailable, codeStateNotCommitted, "")
	if !strings.Contains(string(r.body), "mirror") || r.header.Get("Retry-After") != "1" {
		t.Errorf("a mirror's answer: %s, Retry-After %q", r.body, r.header.Get("Retry-After"))
	}
	newTestNode(t).get("/v1/state/proof?key=mission%2Fx").wantError(t, http.StatusNotFound, codeNotFound, "")
}
