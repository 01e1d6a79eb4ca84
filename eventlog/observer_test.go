package eventlog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestIndependentObserver hands bundles to docs/examples/verify-bundle.mjs, an
// observer written in JavaScript with only JCS, SHA-256 and Ed25519, and requires
// it to accept a clean bundle with awkward payloads and reject a tampered one. Node
// is part of every machine this project builds on (README).
func TestIndependentObserver(t *testing.T) {
	l := openMem(t, Options{})
	mustAppend(t, l,
		draft("mission.created", "title", "Convoy éscort — zone 7 🚀 </script> & \u2028", "n", 9007199254740991,
			"neg", -42, "frac", 0.1, "exp", 1e21, "nested", map[string]any{"z": []any{true, nil, "\x01\x7f"}, "€": 1, "a": "\"q\"\\"}),
		draft("mission.accepted", "claimer", "enforcer-one"),
	)
	var bundle bytes.Buffer
	if _, err := l.WriteBundle(context.Background(), &bundle, BundleHeader{}, nil); err != nil {
		t.Fatal(err)
	}
	run := func(input []byte) (string, error) { return runObserver(t, input) }
	// Both observers, this package's and the independent one, take every faithful
	// copy of the bundle as they take the bundle, and reject every copy of a
	// tampered one at the same seq.
	eachCopy(t, bundle.Bytes(), func(t *testing.T, b []byte) {
		if out, err := run(b); err != nil || !strings.HasPrefix(out, "ok: 3 events") {
			t.Fatalf("observer rejected a clean bundle: %v: %s", err, out)
		}
		if _, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil); err != nil {
			t.Fatalf("VerifyBundle rejected a clean bundle: %v", err)
		}
	})
	tampered := bytes.Replace(bundle.Bytes(), []byte("enforcer-one"), []byte("enforcer-two"), 1)
	eachCopy(t, tampered, func(t *testing.T, b []byte) {
		if out, err := run(b); err == nil || !strings.Contains(out, "seq 3") {
			t.Fatalf("observer accepted a tampered bundle or named the wrong seq: %v: %s", err, out)
		}
		var ce *ChainError
		if _, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil); !errors.As(err, &ce) || ce.Seq != 3 {
			t.Fatalf("VerifyBundle: err = %v, want broken chain at seq 3", err)
		}
	})
}

// runObserver runs docs/examples/verify-bundle.mjs on a bundle and returns its
// output line; the error is non-nil when it exits non-zero.
func runObserver(t *testing.T, bundle []byte) (string, error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for the independent observer test: ", err)
	}
	cmd := exec.Command(node, "../docs/examples/verify-bundle.mjs", "-")
	cmd.Stdin = bytes.NewReader(bundle)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
