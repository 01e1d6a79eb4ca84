package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := Create(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Create(path, []byte("second"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: %v, want fs.ErrExist", err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "first" {
		t.Fatalf("content %q, want the first write", b)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	assertOnly(t, dir, "secret")
}

func TestReplaceOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint")
	for _, s := range []string{"one", "two"} {
		if err := Replace(path, "", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	assertOnly(t, dir, "checkpoint")
}

func TestReplaceIntoMissingDirLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := Replace(filepath.Join(dir, "no", "such"), dir, []byte("x"), 0o644); err == nil {
		t.Fatal("Replace into a missing directory succeeded")
	}
	assertOnly(t, dir)
}

// assertOnly fails when dir holds anything but names: no temporary file may
// be left behind.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(names) {
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		t.Fatalf("directory holds %v, want %v", got, names)
	}
}
