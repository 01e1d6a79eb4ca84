package eventlog

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOpenWrongKeyNamesBoth opens a chain longer than the tail check with
// another key: Open refuses with ErrWrongKey and names the chain's DID as the
// chain's and the key's as the key's, whatever the window of the tail check.
func TestOpenWrongKeyNamesBoth(t *testing.T) {
	for _, tailCheck := range []int{1024, 4} {
		t.Run(fmt.Sprintf("tail check %d", tailCheck), func(t *testing.T) {
			dir := t.TempDir()
			key := seedKey(t, vectorSeed)
			l, err := Open(Options{Dir: dir, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			for i := 2; i <= 10; i++ {
				mustAppend(t, l, draft("test.numbered", "n", i))
			}
			chainDID := l.NodeDID()
			l.Close()

			other := seedKey(t, fmt.Sprintf("%064x", 7))
			otherDID := DIDKey(other.Public().(ed25519.PublicKey))
			_, err = Open(Options{Dir: dir, Key: other, TailCheck: tailCheck})
			want := fmt.Sprintf("the chain belongs to %s, the node key is %s", chainDID, otherDID)
			if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Open with another key: err = %v, want ErrWrongKey saying %q", err, want)
			}
		})
	}
}

// TestChainNodeDID reads the chain's DID without the key and without writing:
// the files of the store are the same before and after, but for the time of
// LOCK, which Pebble takes as any opener does.
func TestChainNodeDID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	if did, err := ChainNodeDID(dir); err != nil || did != "" {
		t.Fatalf("no store: %q, %v; want no DID and no error", did, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ChainNodeDID created %s: %v", dir, err)
	}
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed)})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, draft("test.numbered", "n", 2))
	want := l.NodeDID()
	l.Close()

	before := storeFiles(t, dir)
	did, err := ChainNodeDID(dir)
	if err != nil || did != want {
		t.Fatalf("ChainNodeDID = %q, %v; want %s", did, err, want)
	}
	if after := storeFiles(t, dir); !slices.Equal(before, after) {
		t.Errorf("ChainNodeDID changed the store:\nbefore %v\nafter  %v", before, after)
	}
}

// storeFiles lists each file of dir with its size and modification time; of
// LOCK only the name.
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "LOCK" {
			out = append(out, e.Name())
			continue
		}
		out = append(out, fmt.Sprintf("%s %d %d", e.Name(), fi.Size(), fi.ModTime().UnixNano()))
	}
	return out
}
