package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/transparency"
)

// TestTransparencyObserverJS hands proofs from a running node to
// docs/examples/check-inclusion.mjs, an observer written with nothing but
// SHA-256, Ed25519 and JCS, which checks the note signature, the event's id
// and signature and the RFC 9162 inclusion path itself: it must accept the
// node's proofs with the key pinned, and refuse every tampered copy, an
// altered event, and the right proof under another key.
func TestTransparencyObserverJS(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		testtool.Missing(t, "node is not on PATH: install Node.js 20 or later to run docs/examples/check-inclusion.mjs: "+err.Error())
	}
	check := func(proof []byte, vkey string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, nodeJS, "../../docs/examples/check-inclusion.mjs", "-", vkey)
		cmd.Stdin = bytes.NewReader(proof)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("run check-inclusion.mjs: %v", err)
		}
		return strings.TrimSpace(string(out)), err == nil
	}

	dir := trStoppedNode(t, 40)
	p := startProcess(t, dir)
	for i := range 10 { // events with real payloads on top of the notes
		if _, err := bootstrapOnce(httpClient, p, "js-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	obs := trObserverToken(t, dir)
	var sum transparency.Summary
	getJSON(t, p.url+"/v1/transparency", obs, 200, &sum)
	proofs := map[uint64]string{}
	for _, seq := range []uint64{1, 2, 33, 59, 60} {
		out := trMust(t, "transparency", "prove", strconv.FormatUint(seq, 10), "--addr", p.url, "--token", obs)
		requireProof(t, out, sum.VerifierKey, seq, 60)
		got, ok := check([]byte(out), sum.VerifierKey)
		if want := "ok: seq " + strconv.FormatUint(seq, 10) + " (event "; !ok || !strings.HasPrefix(got, want) {
			t.Fatalf("check-inclusion.mjs rejected the proof of seq %d: %s", seq, got)
		}
		proofs[seq] = out
	}

	tampering := trProofTampering(requireProof(t, proofs[2], sum.VerifierKey, 2, 60).EventID)
	tampering["the event's payload changed"] = func(m map[string]any) {
		m["event"].(map[string]any)["payload"].(map[string]any)["faction"] = "chaos"
	}
	for name, tamper := range tampering {
		if got, ok := check(trTampered(t, proofs[59], tamper), sum.VerifierKey); ok || !strings.HasPrefix(got, "invalid: ") {
			t.Errorf("check-inclusion.mjs took a proof with %s: %s", name, got)
		}
	}
	if got, ok := check([]byte(proofs[59]), trOtherKey(t)); ok || !strings.Contains(got, "not signed by") {
		t.Errorf("check-inclusion.mjs took the proof under another key: %s", got)
	}
}
