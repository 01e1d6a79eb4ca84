package transparency

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// fileMode is the permission bits of path.
func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestEvidenceFileNeverReplaced: detections in the same second
// get files of their own, an earlier file is never replaced, and no temporary
// file is left behind.
func TestEvidenceFileNeverReplaced(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "node.json")
	at := time.Date(2026, 11, 23, 19, 20, 37, 0, time.UTC)
	var paths []string
	for _, body := range []string{"first fork\n", "second fork\n", "third fork\n"} {
		p, err := writeEvidenceFile(state, "forked", at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rb, err := writeEvidenceFile(state, "rolled_back", at, []byte("rollback\n"))
	if err != nil {
		t.Fatal(err)
	}
	base := state + ".evidence-20261123T192037Z-"
	want := map[string]string{
		base + "forked.json":      "first fork\n",
		base + "forked-2.json":    "second fork\n",
		base + "forked-3.json":    "third fork\n",
		base + "rolled_back.json": "rollback\n",
	}
	if got := append(paths, rb); !slices.Equal(got, []string{base + "forked.json", base + "forked-2.json", base + "forked-3.json", base + "rolled_back.json"}) {
		t.Fatalf("evidence paths %q", got)
	}
	for path, body := range want {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != body || fileMode(t, path) != 0o600 {
			t.Errorf("%s: %q %v, want %q, mode 0600", path, b, err, body)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != len(want) {
		t.Fatalf("the directory holds %v (%v), want only the %d evidence files", entries, err, len(want))
	}
}
