package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
)

// TestRestoreHoldsTheManifest: civnode restore holds the restored tree to the
// manifest's tree_root and signed checkpoint. A backup whose manifest was
// changed (its tree_root; its checkpoint replaced by one of another tree,
// one signed by another key of the same name, or another node's; or all
// three replaced, consistently, by the node's own checkpoint of an older
// tree) is refused with an error that says so, and no data dir is left.
func TestRestoreHoldsTheManifest(t *testing.T) {
	origin := trStoppedNode(t, 50)
	bk := filepath.Join(t.TempDir(), "backup")
	trMust(t, "backup", bk, "--data-dir", origin)

	l := openTestLog(t, origin)
	head49, cp49, err := l.TreeCheckpointAt(49)
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := l.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	did, originName := l.NodeDID(), l.Origin()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	skey, _, err := note.GenerateKey(rand.Reader, originName)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := note.Sign(&note.Note{Text: eventlog.CheckpointText(originName, head)}, signer)
	if err != nil {
		t.Fatal(err)
	}
	_, otherCP, _ := trTreeHead(t, trStoppedNode(t, 50))
	otherRoot := head.Root
	otherRoot[0] ^= 0xff

	for _, tc := range []struct {
		name   string
		set    map[string]any
		stderr string
	}{
		{"tree_root", map[string]any{"tree_root": b64Hash(otherRoot)},
			"the backup disagrees with its manifest: its checkpoint is of the tree of 50 events with root " + b64Hash(head.Root) + ", its tree_size and tree_root say 50 events with root " + b64Hash(otherRoot)},
		{"checkpoint of another tree", map[string]any{"checkpoint": string(cp49)},
			"its checkpoint is of the tree of 49 events"},
		{"checkpoint signed by another key", map[string]any{"checkpoint": string(forged)},
			"its checkpoint is not one " + did + " signed"},
		{"another node's checkpoint", map[string]any{"checkpoint": string(otherCP)},
			"its checkpoint is not one " + did + " signed"},
		{"an older tree of the node's", map[string]any{"tree_size": 49, "tree_root": b64Hash(head49.Root), "checkpoint": string(cp49)},
			"a node's backup is of the tree at its tip, seq 50, but its tree_size is 49"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tampered := filepath.Join(t.TempDir(), "backup")
			copyTree(t, bk, tampered)
			editManifest(t, tampered, tc.set)
			target := filepath.Join(t.TempDir(), "restored")
			out := trFails(t, 1, tc.stderr, "restore", tampered, "--data-dir", target)
			if strings.Contains(out, "restored ") {
				t.Fatalf("restore reported success: %s", out)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("the refused restore left %s: %v", target, err)
			}
		})
	}
	trMust(t, "restore", bk, "--data-dir", filepath.Join(t.TempDir(), "restored"))
}

// editManifest sets fields of the manifest of the backup in dir.
func editManifest(t *testing.T, dir string, set map[string]any) {
	t.Helper()
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if _, ok := m[k]; !ok {
			t.Fatalf("the manifest has no %s", k)
		}
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func b64Hash(h [32]byte) string { return base64.StdEncoding.EncodeToString(h[:]) }
