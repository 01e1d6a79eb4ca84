package main

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

// TestMirrorRequiresWitnesses: with --witness and --quorum, a mirror takes
// the chain of a published directory only when its checkpoint is the seal's
// tree cosigned by the quorum; asked for a witness that did not cosign, with
// --once it exits 1 "not witnessed" and stores nothing, and keeps no
// evidence, since a tree not cosigned yet proves nothing against the origin.
func TestMirrorRequiresWitnesses(t *testing.T) {
	root := t.TempDir()
	a, wkey, vkey := startWitnessedPair(t, root)
	a.stop(t)
	pub, url := mrPublish(t, root+"/a")
	if b, _ := os.ReadFile(filepath.Join(pub, "checkpoint")); !strings.Contains(string(b), "— civnode-witness/") {
		t.Fatalf("the published checkpoint carries no cosignature:\n%s", b)
	}

	_, otherPub, _ := ed25519.GenerateKey(nil)
	other := witness.CosignatureVerifierKey("other.example/witness", otherPub.Public().(ed25519.PublicKey))
	refused := filepath.Join(root, "refused")
	out, errOut, code := mrMirror(t, url, refused, "--witness", other)
	if code != 1 || !strings.Contains(errOut, "not witnessed: 0 of 1 cosignatures") {
		t.Fatalf("a mirror requiring a witness that did not cosign: exit %d, %q %q", code, out, errOut)
	}
	// A tree not cosigned (yet) proves nothing against the origin: no
	// evidence, and a follower would wait for the cosignatures.
	if files, _ := filepath.Glob(filepath.Join(refused, "mirror.evidence-*")); len(files) != 0 {
		t.Fatalf("a tree not witnessed left evidence: %v", files)
	}
	if got := mrChain(t, filepath.Join(refused, "db"), mustOriginPub(t, vkey)); len(got) != 0 {
		t.Fatalf("a refused mirror stored %d events", len(got))
	}
	if _, errOut, code := mrMirror(t, url, filepath.Join(root, "q2"), "--witness", wkey, "--quorum", "2"); code != 2 || !strings.Contains(errOut, "quorum") {
		t.Fatalf("--quorum above the witnesses given: exit %d, %q", code, errOut)
	}

	taken := filepath.Join(root, "taken")
	out, errOut, code = mrMirror(t, url, taken, "--witness", wkey, "--quorum", "1")
	if code != 0 || !strings.Contains(out, "events stored") {
		t.Fatalf("a mirror requiring the witness that cosigned: exit %d, %q %q", code, out, errOut)
	}
	requireSameChain(t, root+"/a", taken, len(mrChain(t, filepath.Join(root, "a", "db"), mustOriginPub(t, vkey))))
}

func mustOriginPub(t *testing.T, vkey string) []byte {
	t.Helper()
	k, err := transparency.ParseKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey()
}
