package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// requireProof decodes prove's output and checks it independently of the
// command: the checkpoint opens with vkey and names a tree of size events
// whose root is root_hash; the event is the one at seq and its id is
// event_id; the leaf is SHA-256(0x00 ‖ id) at seq-1; and tlog.CheckRecord
// takes the proof.
func requireProof(t *testing.T, out, vkey string, seq uint64, size int64) transparency.Proof {
	t.Helper()
	var p transparency.Proof
	jsonOf(t, out, &p)
	tree := trOpen(t, vkey, []byte(p.Checkpoint))
	if p.VerifierKey != vkey || tree.N != size || p.TreeSize != size || p.RootHash != tree.Hash || p.Seq != seq || p.LeafIndex != int64(seq)-1 {
		t.Fatalf("proof of seq %d in the tree of %d: %s", seq, size, out)
	}
	var ev eventlog.Event
	if err := json.Unmarshal(p.Event, &ev); err != nil || ev.Seq != seq || ev.ID != p.EventID {
		t.Fatalf("proof's event %s (%v), want seq %d with id %s", p.Event, err, seq, p.EventID)
	}
	id, err := hex.DecodeString(p.EventID)
	if err != nil || len(id) != 32 || p.LeafHash != tlog.RecordHash(id) {
		t.Fatalf("leaf_hash %v is not the leaf of event_id %s", p.LeafHash, p.EventID)
	}
	if err := tlog.CheckRecord(p.Proof, size, tree.Hash, int64(seq)-1, p.LeafHash); err != nil {
		t.Fatalf("tlog.CheckRecord of seq %d: %v", seq, err)
	}
	return p
}

// trTampered is a proof changed by f, as JSON.
func trTampered(t *testing.T, proof string, f func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	jsonOf(t, proof, &m)
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// trProofTampering is every way tests change a proof that a checker must
// refuse; otherKey is a verifier key that is not the node's.
func trProofTampering(otherID string) map[string]func(map[string]any) {
	return map[string]func(map[string]any){
		"a proof hash changed": func(m map[string]any) {
			p := m["proof"].([]any)
			p[len(p)/2] = tlog.RecordHash([]byte("not a node")).String()
		},
		"a proof hash missing": func(m map[string]any) { m["proof"] = m["proof"].([]any)[1:] },
		"another event's id":   func(m map[string]any) { m["event_id"] = otherID },
		"another leaf index":   func(m map[string]any) { m["leaf_index"] = m["leaf_index"].(float64) + 1 },
		"the checkpoint's size changed": func(m map[string]any) {
			cp := m["checkpoint"].(string)
			lines := strings.SplitN(cp, "\n", 3)
			n, _ := strconv.Atoi(lines[1])
			m["checkpoint"] = lines[0] + "\n" + strconv.Itoa(n+1) + "\n" + lines[2]
		},
	}
}

// trOtherKey is the verifier key of a node that did not sign anything here.
func trOtherKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := note.NewEd25519VerifierKey("civnode/"+eventlog.DIDKey(pub), pub)
	if err != nil {
		t.Fatal(err)
	}
	return vkey
}

// trTlogcheck builds docs/examples/tlogcheck, the short checker of
// docs/transparency.md, and returns a function that runs it on a proof with a
// pinned key (and any flags before it: -witness, -quorum), returning its
// output and whether it exited 0.
func trTlogcheck(t *testing.T) func(proof []byte, args ...string) (string, bool) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tlogcheck")
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "../../docs/examples/tlogcheck").CombinedOutput(); err != nil {
		t.Fatalf("build docs/examples/tlogcheck: %v\n%s", err, out)
	}
	return func(proof []byte, args ...string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdin = bytes.NewReader(proof)
		out, err := cmd.CombinedOutput()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("run tlogcheck: %v", err)
		}
		return string(out), err == nil
	}
}

// TestTransparencyProve proves events of a running node with an observer
// token, and through the data dir (the node channel), then of the stopped
// node in an earlier tree: each output verifies with tlog and note alone, and
// with docs/examples/tlogcheck pinned to the node's key; the event is the one
// the node serves, byte for byte. tlogcheck refuses every tampered copy and
// the right proof under another key.
func TestTransparencyProve(t *testing.T) {
	dir := trStoppedNode(t, 300)
	tlogcheck := trTlogcheck(t)
	p := startProcess(t, dir)
	obs := trObserverToken(t, dir)
	var sum transparency.Summary
	getJSON(t, p.url+"/v1/transparency", p.token, 200, &sum)

	proofs := map[uint64]string{}
	for _, seq := range []uint64{1, 2, 150, 256, 257, 300} {
		s := strconv.FormatUint(seq, 10)
		out := trMust(t, "transparency", "prove", s, "--addr", p.url, "--token", obs)
		requireProof(t, out, sum.VerifierKey, seq, 300)
		if got, ok := tlogcheck([]byte(out), sum.VerifierKey); !ok || !strings.HasPrefix(got, "ok: event ") {
			t.Fatalf("tlogcheck of the proof of seq %d: %s", seq, got)
		}
		if local := trMust(t, "transparency", "prove", s, "--data-dir", dir); local != out {
			t.Fatalf("prove %d through the data dir printed\n%s\nwith a token\n%s", seq, local, out)
		}
		proofs[seq] = out
	}
	if out, errOut, code := trRunToken(t, obs, nil, "transparency", "prove", "150", "--addr", p.url); code != 0 || out != proofs[150] {
		t.Fatalf("prove with the token in $CIVNODE_TOKEN: exit %d, stderr %s\n%s", code, errOut, out)
	}
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	getJSON(t, p.url+"/v1/events?limit=1", obs, 200, &page)
	if got := requireProof(t, proofs[1], sum.VerifierKey, 1, 300).Event; !bytes.Equal(got, page.Events[0]) {
		t.Fatalf("the proof's event\n%s\nis not the event as served\n%s", got, page.Events[0])
	}

	other := requireProof(t, proofs[2], sum.VerifierKey, 2, 300).EventID
	for name, tamper := range trProofTampering(other) {
		if got, ok := tlogcheck(trTampered(t, proofs[150], tamper), sum.VerifierKey); ok {
			t.Errorf("tlogcheck took a proof with %s: %s", name, got)
		}
	}
	if got, ok := tlogcheck([]byte(proofs[150]), trOtherKey(t)); ok || !strings.Contains(got, "not signed by") {
		t.Errorf("tlogcheck took the proof under another key: %s", got)
	}

	trFails(t, 1, "seq 301 is beyond the tree, which has 300 events", "transparency", "prove", "301", "--addr", p.url, "--token", obs)
	trFails(t, 1, "serves the checkpoint of its current tree only", "transparency", "prove", "3", "--tree-size", "200", "--addr", p.url, "--token", obs)
	trFails(t, 1, "refused the token", "transparency", "prove", "3", "--addr", p.url, "--token", strings.Repeat("0", 64))
	trStop(t, p)

	out := trMust(t, "transparency", "prove", "100", "--tree-size", "200", "--data-dir", dir)
	old := requireProof(t, out, sum.VerifierKey, 100, 200)
	l := openTestLog(t, dir)
	root, err := l.TreeRoot(200)
	l.Close()
	if err != nil || old.RootHash != root {
		t.Fatalf("the proof in the tree of 200 has root %v, the log's is %v (%v)", old.RootHash, root, err)
	}
	if got, ok := tlogcheck([]byte(out), sum.VerifierKey); !ok {
		t.Fatalf("tlogcheck of a proof in an earlier tree: %s", got)
	}
}
