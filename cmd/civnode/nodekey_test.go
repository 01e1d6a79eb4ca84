package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// chainOf makes a stopped node in a fresh dir with a chain of n events and
// returns the dir and the chain's DID. More events than the tail check covers
// put genesis outside the window that Open walks.
func chainOf(t *testing.T, n uint64) (string, string) {
	t.Helper()
	dir := t.TempDir()
	startNode(t, dir).stop(t)
	l := openTestLog(t, dir)
	var drafts []eventlog.Draft
	for seq := l.Tip().Seq + 1; seq <= n; seq++ {
		drafts = append(drafts, eventlog.Draft{Type: "test.note", Payload: map[string]uint64{"n": seq}})
	}
	if _, err := l.Append(context.Background(), drafts...); err != nil {
		t.Fatal(err)
	}
	did := l.NodeDID()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, did
}

// dirState lists every file under dir with its size and modification time,
// but only the name of Pebble's LOCK, which every opener takes.
func dirState(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.Name() == "LOCK" {
			out = append(out, rel)
		} else {
			out = append(out, fmt.Sprintf("%s %d %d", rel, fi.Size(), fi.ModTime().UnixNano()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMissingNodeKey removes node.key (and control.token) beside a chain:
// serve refuses, creates neither file and changes nothing in db, and it and
// the one-shot commands say whose chain it is and to restore the key.
func TestMissingNodeKey(t *testing.T) {
	dir, did := chainOf(t, 1100)
	for _, f := range []string{"node.key", "control.token"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	before := dirState(t, dir)
	want := fmt.Sprintf("node.key is missing in %s, but its chain belongs to %s; restore node.key (a new key cannot continue this chain)", dir, did)
	for _, args := range [][]string{
		{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0"},
		{"verify", "--data-dir", dir},
		{"export", "--data-dir", dir},
		{"replay", "--data-dir", dir},
	} {
		res := runCLI(t, nil, args...)
		if res.code != 1 || !strings.Contains(res.stderr, want) || res.stdout != "" {
			t.Errorf("%s without node.key: exit %d, stdout %q, stderr %q; want 1 and %q", args[0], res.code, res.stdout, res.stderr, want)
		}
	}
	for _, f := range []string{"node.key", "control.token"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the refusals: %v, want none", f, err)
		}
	}
	if after := dirState(t, dir); !slices.Equal(before, after) {
		t.Errorf("the data dir changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestOtherNodeKey puts another key in node.key: serve refuses, keeps that key
// file, and names the chain's DID as the chain's and the key's DID as the
// key's. (Pebble may have moved its WAL into an sstable on the way: the same
// data in other files.)
func TestOtherNodeKey(t *testing.T) {
	dir, chainDID := chainOf(t, 1100)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := pem.EncodeToMemory(&pem.Block{Type: datadir.PEMType, Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "node.key"), keyFile, 0o600); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the chain belongs to %s, the node key is %s", chainDID, eventlog.DIDKey(pub))
	for _, args := range [][]string{
		{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0"},
		{"verify", "--data-dir", dir},
	} {
		res := runCLI(t, nil, args...)
		if res.code != 1 || !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "restore the chain's node.key") {
			t.Errorf("%s with another key: exit %d, stdout %q, stderr %q; want 1 and %q", args[0], res.code, res.stdout, res.stderr, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "node.key")); err != nil || !bytes.Equal(b, keyFile) {
		t.Errorf("node.key changed (%v)", err)
	}
	if did, err := eventlog.ChainNodeDID(filepath.Join(dir, "db")); err != nil || did != chainDID {
		t.Errorf("the chain now belongs to %q (%v), want %s", did, err, chainDID)
	}
}
