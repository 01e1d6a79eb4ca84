package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/witness"
)

// TestCheckersRequireCosignatures: the offline checkers of docs/examples
// (check-inclusion.mjs, in JavaScript, and tlogcheck, in Go) given a witness
// key and a quorum accept a proof in the node's witnessed tree (transparency
// prove --witnessed) and refuse a plain proof, a witnessed proof when the
// required witness is another, and a proof whose cosignature was altered;
// without a witness key they still take the witnessed proof, whose node
// signature is no longer the note's last line.
func TestCheckersRequireCosignatures(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		testtool.Missing(t, "node is not on PATH: install Node.js 20 or later to run docs/examples/check-inclusion.mjs: "+err.Error())
	}
	js := func(proof []byte, args ...string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, nodeJS, append([]string{"../../docs/examples/check-inclusion.mjs", "-"}, args...)...)
		cmd.Stdin = bytes.NewReader(proof)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("run check-inclusion.mjs: %v", err)
		}
		return strings.TrimSpace(string(out)), err == nil
	}
	tlogcheck := trTlogcheck(t)

	root := t.TempDir()
	a, wkey, vkey := startWitnessedPair(t, root)

	prove := func(args ...string) []byte {
		t.Helper()
		r := runCLI(t, nil, append([]string{"transparency", "prove", "2", "--addr", a.url, "--token", a.token}, args...)...)
		if r.code != 0 {
			t.Fatalf("transparency prove %v: %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return []byte(r.stdout)
	}
	witnessed, plain := prove("--witnessed"), prove()
	if !bytes.Contains(witnessed, []byte(`— civnode-witness/`)) {
		t.Fatalf("prove --witnessed carries no cosignature:\n%s", witnessed)
	}
	_, otherPub, _ := ed25519.GenerateKey(nil)
	other := witness.CosignatureVerifierKey("other.example/witness", otherPub.Public().(ed25519.PublicKey))
	// The cosignature's last base64 characters, changed.
	line := witnessed[bytes.Index(witnessed, []byte(`— civnode-witness/`)):]
	line = line[:bytes.Index(line, []byte(`\n`))]
	altered := bytes.Replace(witnessed, line, append(bytes.Clone(line[:len(line)-6]), "AAAA=="...), 1)

	for name, run := range map[string]func([]byte, ...string) (string, bool){"check-inclusion.mjs": js, "tlogcheck": tlogcheck} {
		witnessFlag := "--witness"
		if name == "tlogcheck" {
			witnessFlag = "-witness"
		}
		require := func(k string) []string {
			if name == "tlogcheck" {
				return []string{witnessFlag, k, "-quorum", "1", vkey}
			}
			return []string{vkey, witnessFlag, k, "--quorum", "1"}
		}
		if got, ok := run(witnessed, require(wkey)...); !ok || !strings.Contains(got, "ok: ") || !strings.Contains(got, "cosigned by 1 of 1 witnesses") {
			t.Errorf("%s refused the witnessed proof: %s", name, got)
		}
		if got, ok := run(witnessed, vkey); !ok || !strings.Contains(got, "ok: ") {
			t.Errorf("%s refused the witnessed proof without a witness required: %s", name, got)
		}
		for what, tc := range map[string]struct {
			proof []byte
			key   string
		}{
			"a plain proof":            {plain, wkey},
			"another witness required": {witnessed, other},
			"an altered cosignature":   {altered, wkey},
		} {
			if got, ok := run(tc.proof, require(tc.key)...); ok || !strings.Contains(got, "not witnessed: 0 of 1 cosignatures") {
				t.Errorf("%s took %s: %s", name, what, got)
			}
		}
	}
}
