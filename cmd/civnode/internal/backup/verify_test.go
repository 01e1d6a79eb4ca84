package backup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewTarget: a missing dir is made and removed on undo; an empty one is
// emptied again; one that holds anything is refused.
func TestNewTarget(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "new")
	undo, err := NewTarget(missing)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(missing); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v %v", fi, err)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("undo left %s: %v", missing, err)
	}
	empty := t.TempDir()
	undo, err = NewTarget(empty)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(empty, "db"), "x")
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("undo left %v", ents)
	}
	mustWrite(t, filepath.Join(empty, "node.key"), "x")
	if _, err := NewTarget(empty); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("a full dir: %v", err)
	}
}
