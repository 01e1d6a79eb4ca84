package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/transparency"
)

// A log that lies about its size: its key is a node's (civnode/<did>), and
// it signs checkpoints of sizes above 2^62, where golang.org/x/mod/sumdb/tlog
// loops for ever. Everything that takes a size from outside must refuse such
// a checkpoint at once.

// hostileLog is a node key that signs whatever checkpoint it is asked to.
type hostileLog struct {
	key    ed25519.PrivateKey
	did    string
	origin string
	vkey   string
	signer note.Signer
}

func newHostileLog(t *testing.T) *hostileLog {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	h := &hostileLog{key: key, did: eventlog.DIDKey(pub)}
	h.origin = "civnode/" + h.did
	if h.vkey, err = note.NewEd25519VerifierKey(h.origin, pub); err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(h.vkey)
	if err != nil {
		t.Fatal(err)
	}
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", h.origin, v.KeyHash(), base64.StdEncoding.EncodeToString(append([]byte{1}, key.Seed()...)))
	if h.signer, err = note.NewSigner(skey); err != nil {
		t.Fatal(err)
	}
	return h
}

// checkpoint is the log's signed checkpoint of size with root.
func (h *hostileLog) checkpoint(t *testing.T, size int64, root tlog.Hash) []byte {
	t.Helper()
	signed, err := note.Sign(&note.Note{Text: eventlog.CheckpointText(h.origin, eventlog.TreeHead{Size: size, Root: root})}, h.signer)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func madeUpHash(s string) tlog.Hash { return sha256.Sum256([]byte(s)) }

// TestTransparencyCheckRefusesHugeTreeSize: civnode transparency check exits
// with an error at once, its state file unchanged, when the log it follows
// serves a signed checkpoint of 2^62+5 events, and when its state file holds
// one; it never spins in tlog's proof check.
func TestTransparencyCheckRefusesHugeTreeSize(t *testing.T) {
	needBinary(t)
	h := newHostileLog(t)
	pub := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(pub, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(transparency.VerifierKeyFile, []byte(h.vkey+"\n"))
	write(transparency.CheckpointFile, h.checkpoint(t, 1, madeUpHash("leaf 0")))
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	t.Cleanup(srv.Close)
	state := filepath.Join(t.TempDir(), "state.json")
	check := func() (string, string, int) {
		return trRun(t, nil, "transparency", "check", "--tiles", srv.URL, "--state", state)
	}
	if out, errOut, code := check(); code != 0 {
		t.Fatalf("first check: exit %d\n%s%s", code, out, errOut)
	}
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}

	// The exit status of a check that spun until cliTimeout killed it is
	// -1; a refusal is 1 and names the size.
	write(transparency.CheckpointFile, h.checkpoint(t, 1<<62+5, madeUpHash("a root")))
	if out, errOut, code := check(); code != 1 || !strings.Contains(errOut, "tree size out of range") {
		t.Fatalf("check of a served checkpoint of 2^62+5: exit %d, want 1 naming the tree size\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if after, _ := os.ReadFile(state); !bytes.Equal(after, before) {
		t.Fatalf("the refused check changed the state file:\n%s", after)
	}

	huge, err := json.Marshal(transparency.State{VerifierKey: h.vkey, Checkpoint: string(h.checkpoint(t, 1<<62+5, madeUpHash("a root")))})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, huge, 0o600); err != nil {
		t.Fatal(err)
	}
	write(transparency.CheckpointFile, h.checkpoint(t, 1<<62+6, madeUpHash("another root")))
	if out, errOut, code := check(); code != 1 || !strings.Contains(errOut, "tree size out of range") {
		t.Fatalf("check from a stored checkpoint of 2^62+5: exit %d, want 1 naming the tree size\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// hugeProof is a proof in the format of transparency prove that verifies in
// every respect but its size: an event signed by the log's key, leaf 0 of a
// tree of size events, the path of made-up hashes from it and the root they
// lead to, in a checkpoint signed by the log's key. size must be a multiple
// of 1024 above 2^53, so that a JSON number holds it exactly.
func hugeProof(t *testing.T, h *hostileLog, size int64) []byte {
	t.Helper()
	// Members in JCS order (sorted, plain strings and numbers), so that
	// encoding/json writes the JCS form itself.
	unsigned, err := json.Marshal(map[string]any{"node_did": h.did, "seq": 1, "type": "test.hostile"})
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(unsigned)
	event := map[string]any{"node_did": h.did, "seq": 1, "type": "test.hostile",
		"id": hex.EncodeToString(id[:]), "signature": base64.StdEncoding.EncodeToString(ed25519.Sign(h.key, unsigned))}
	leaf := tlog.RecordHash(id[:])
	// RFC 9162 §2.1.3.2 for leaf 0: each hash of the path is a right
	// sibling, one per bit of size−1.
	root := leaf
	var path []tlog.Hash
	for sn := size - 1; sn > 0; sn >>= 1 {
		p := madeUpHash(fmt.Sprint("path ", len(path)))
		path = append(path, p)
		root = tlog.NodeHash(root, p)
	}
	b, err := json.Marshal(map[string]any{
		"checkpoint": string(h.checkpoint(t, size, root)), "verifier_key": h.vkey,
		"seq": 1, "event_id": hex.EncodeToString(id[:]), "leaf_index": 0, "leaf_hash": leaf,
		"tree_size": size, "root_hash": root, "proof": path, "event": event,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckersRefuseHugeTreeSize: the offline checkers of docs/examples
// refuse, at once, a proof that holds in every respect but that its tree has
// 2^62+4096 events: tlogcheck would spin in tlog, and check-inclusion.mjs,
// exact with BigInt, would take a size no civnode tool takes.
func TestCheckersRefuseHugeTreeSize(t *testing.T) {
	h := newHostileLog(t)
	proof := hugeProof(t, h, 1<<62+4096)
	// A check that spun until cliTimeout killed it prints nothing.
	if out, ok := trTlogcheck(t)(proof, h.vkey); ok || !strings.Contains(out, "tree size 4611686018427392000 is beyond 2^53-1") {
		t.Errorf("tlogcheck of a tree of 2^62+4096: %q", out)
	}
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		testtool.Missing(t, "node is not on PATH: install Node.js 20 or later to run docs/examples/check-inclusion.mjs: "+err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeJS, "../../docs/examples/check-inclusion.mjs", "-", h.vkey)
	cmd.Stdin = bytes.NewReader(proof)
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); !exited || !strings.Contains(string(out), "invalid: the checkpoint's tree size 4611686018427392000 is beyond 2^53 − 1") {
		t.Errorf("check-inclusion.mjs of a tree of 2^62+4096: %v %q", err, out)
	}
}

// TestVerifyBundleRefusesHugeEventCount: verify-bundle.mjs refuses a bundle
// whose event_count is beyond 2^53 − 1 before it reads an event.
func TestVerifyBundleRefusesHugeEventCount(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		testtool.Missing(t, "node is not on PATH: install Node.js 20 or later to run docs/examples/verify-bundle.mjs: "+err.Error())
	}
	for _, count := range []string{"4611686018427387909", "9007199254740992", "-1", "1.5"} {
		ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		cmd := exec.CommandContext(ctx, nodeJS, "../../docs/examples/verify-bundle.mjs", "-")
		cmd.Stdin = strings.NewReader(`{"node_did":"did:key:z6Mk","event_count":` + count + `,"events":[]}`)
		out, err := cmd.CombinedOutput()
		cancel()
		if _, exited := err.(*exec.ExitError); !exited || strings.TrimSpace(string(out)) != "invalid: event_count is not a whole number from 0 to 2^53 − 1" {
			t.Errorf("event_count %s: %v %q", count, err, out)
		}
	}
}
