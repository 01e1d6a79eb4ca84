package eventlog

import (
	"bytes"
	"context"
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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required for the independent observer test: ", err)
	}
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
	run := func(input []byte) (string, error) {
		cmd := exec.Command(node, "../docs/examples/verify-bundle.mjs", "-")
		cmd.Stdin = bytes.NewReader(input)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run(bundle.Bytes()); err != nil || !strings.HasPrefix(out, "ok: 3 events") {
		t.Fatalf("observer rejected a clean bundle: %v: %s", err, out)
	}
	tampered := bytes.Replace(bundle.Bytes(), []byte("enforcer-one"), []byte("enforcer-two"), 1)
	if out, err := run(tampered); err == nil || !strings.Contains(out, "seq 3") {
		t.Fatalf("observer accepted a tampered bundle or named the wrong seq: %v: %s", err, out)
	}
}
