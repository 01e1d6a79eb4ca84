package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/witness"
)

// omniwitnessDir is a Go module of its own (so that the omniwitness is no
// dependency of ours) that pins transparency-dev's witness module, whose
// cmd/omniwitness the interop test builds.
var omniwitnessDir = filepath.Join("testdata", "omniwitness")

// buildOmniwitness builds transparency-dev's omniwitness from the module
// proxy into dir; a build that cannot happen here (no proxy, no cache) skips
// the test, or fails it under CI=true.
func buildOmniwitness(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "omniwitness")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"mod", "download"},
		{"build", "-o", bin, "github.com/transparency-dev/witness/cmd/omniwitness"},
	} {
		cmd := exec.CommandContext(ctx, goTool(), args...)
		cmd.Dir = omniwitnessDir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			testtool.Missing(t, fmt.Sprintf("go %s of the omniwitness (in %s) needs a reachable Go module proxy: %v\n%s", strings.Join(args, " "), omniwitnessDir, err, out))
		}
	}
	return bin
}

// freeLoopbackAddr is a loopback address no one listens on, for a program
// that takes its address as a flag.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestOmniwitnessInterop: a node configured with transparency-dev's
// omniwitness (a witness we did not write, built from the module proxy and
// given the node's origin and key in its additional logs file) gets its
// checkpoints cosigned, first from the empty tree and then, as the tree
// grows, with consistency proofs; the witnessed checkpoint carries the
// omniwitness's cosignature, which transparency check --witness accepts.
func TestOmniwitnessInterop(t *testing.T) {
	needBinary(t) // the full suite only: the first build takes about a minute
	tmp := t.TempDir()
	bin := buildOmniwitness(t, tmp)

	// The node's key exists once it started once.
	dir := filepath.Join(tmp, "node")
	n := startNode(t, dir)
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	var sum struct {
		Origin      string `json:"origin"`
		VerifierKey string `json:"verifier_key"`
	}
	getJSON(t, n.url+"/v1/transparency", n.token, 200, &sum)
	n.stop(t)

	const name = "omniwitness.civnode.test"
	witnessVKey, addr := startOmniwitness(t, bin, tmp, name, sum.Origin, sum.VerifierKey)

	n = startNodeArgs(t, dir, "--witness", witnessVKey+"@http://"+addr)
	for round, events := range []int{0, 3} {
		for i := range events {
			appendMission(t, n, fmt.Sprintf("round %d, mission %d", round, i))
		}
		s := waitWitnessed(t, n.url, n.token)
		if !slices.Equal(s.Witnessed.Cosigners, []string{name}) || !strings.Contains(s.Witnessed.Checkpoint, "\n— "+name+" ") {
			t.Fatalf("round %d: the witnessed checkpoint %+v lacks the omniwitness's cosignature", round, s.Witnessed)
		}
		// The node's own signature line and the omniwitness's, over the
		// node's checkpoint body.
		if body, _, _ := strings.Cut(s.Witnessed.Checkpoint, "\n\n"); !strings.HasPrefix(s.Checkpoint, body+"\n\n") {
			t.Fatalf("round %d: the witnessed checkpoint %q is not of the node's %q", round, s.Witnessed.Checkpoint, s.Checkpoint)
		}
		served := getText(t, n.url+"/v1/transparency/checkpoint?witnessed=1", n.token)
		if !bytes.Equal(served, []byte(s.Witnessed.Checkpoint)) {
			t.Fatalf("round %d: ?witnessed=1 served %q, GET /v1/transparency %q", round, served, s.Witnessed.Checkpoint)
		}
		r := runCLI(t, nil, "transparency", "check", "--addr", n.url, "--token", n.token,
			"--state", filepath.Join(tmp, "observer.json"), "--witness", witnessVKey, "--quorum", "1")
		if r.code != 0 {
			t.Fatalf("round %d: transparency check --witness the omniwitness: %d\n%s%s", round, r.code, r.stdout, r.stderr)
		}
	}
}

// startOmniwitness runs transparency-dev's omniwitness (bin) on a free
// loopback port with a new key named name, witnessing the log of origin and
// vkey, its state in dir; it returns its cosignature/v1 verifier key and
// its address, and kills it when the test ends.
func startOmniwitness(t *testing.T, bin, dir, name, origin, vkey string) (witnessVKey, addr string) {
	t.Helper()
	// The omniwitness's key, as a note signer key (type 0x01); it cosigns
	// with the same key as a cosignature/v1 key (type 0x04).
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	noteVKey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(noteVKey)
	if err != nil {
		t.Fatal(err)
	}
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, v.KeyHash(), base64.StdEncoding.EncodeToString(append([]byte{1}, priv.Seed()...)))
	keyPath := filepath.Join(dir, "omniwitness.key")
	logsPath := filepath.Join(dir, "logs.yaml")
	if err := os.WriteFile(keyPath, []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := fmt.Sprintf("Logs:\n  - Origin: %q\n    PublicKey: %q\n    URL: %q\n", origin, vkey, "http://127.0.0.1:1")
	if err := os.WriteFile(logsPath, []byte(logs), 0o600); err != nil {
		t.Fatal(err)
	}
	witnessVKey = witness.CosignatureVerifierKey(name, pub)

	addr = freeLoopbackAddr(t)
	var stderr syncBuffer
	ow := exec.Command(bin, "--listen", addr, "--metrics_listen=", "--private_key_path", keyPath,
		"--db_file", filepath.Join(dir, "omniwitness.db"), "--additional_logs", logsPath, "--logtostderr")
	ow.Stderr, ow.Stdout = &stderr, &stderr
	if err := ow.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- ow.Wait() }()
	t.Cleanup(func() {
		ow.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("omniwitness output:\n%s", stderr.String())
		}
	})
	waitFor(t, "the omniwitness listening on "+addr, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the omniwitness exited: %v\n%s", err, stderr.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return witnessVKey, addr
}
