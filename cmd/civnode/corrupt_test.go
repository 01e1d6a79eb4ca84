package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestServeRefusesCorruptChain changes the newest stored event behind the log's
// back (key layout in eventlog/doc.go), a complete record that no crash could
// have torn, and requires that serve refuses to start naming its seq as
// corrupt, and that verify --data-dir reports it.
func TestServeRefusesCorruptChain(t *testing.T) {
	dir := t.TempDir()
	startNode(t, dir).stop(t)
	appendNotes(t, dir, 1, 2) // seq 2 {"n":1}, seq 3 {"n":2}
	corruptStoredEvent(t, dir, 3, `"n":2`, `"n":9`)

	res := runCLI(t, nil, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0")
	if res.code != 1 || !strings.Contains(res.stderr, "corrupt store at seq 3: id does not match") || strings.Contains(res.stdout, "listening") {
		t.Errorf("serve on a corrupt chain: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, nil, "verify", "--data-dir", dir)
	if res.code != 1 || !strings.HasPrefix(res.stdout, "invalid: corrupt store at seq 3: id does not match") {
		t.Errorf("verify --data-dir of a corrupt chain: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// corruptStoredEvent replaces old with new in the stored bytes of event seq.
func corruptStoredEvent(t *testing.T, dir string, seq uint64, old, new string) {
	t.Helper()
	db, err := pebble.Open(filepath.Join(dir, "db"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	key := binary.BigEndian.AppendUint64([]byte{0x01}, seq)
	v, closer, err := db.Get(key)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	found := bytes.Contains(v, []byte(old))
	damaged := bytes.Replace(v, []byte(old), []byte(new), 1)
	closer.Close()
	if !found {
		db.Close()
		t.Fatalf("event %d does not contain %s", seq, old)
	}
	if err := db.Set(key, damaged, pebble.Sync); err != nil {
		db.Close()
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)         {}
func (quietPebble) Errorf(string, ...any)        {}
func (quietPebble) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
