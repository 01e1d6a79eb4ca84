package backup

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// TestWriteAndRestore: a backup of a store and its secret files restores to a
// data directory whose store opens at the manifest's tip, with the secrets at
// mode 0600 and the snapshot gone from the source once removed.
func TestWriteAndRestore(t *testing.T) {
	data := t.TempDir()
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	l, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(data, "db"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 50 {
		if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.seq", Payload: map[string]int{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(data, "node.key"), "key")
	mustWrite(t, filepath.Join(data, "wallets", "ops"), "wallet key")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	snap, err := TakeSnapshot(l, data, now)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "backup")
	var last, total int64
	m, err := Write(snap, data, []string{"node.key", "control.token", "wallets"}, dest, now, func(d, n int64) { last, total = d, n })
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Remove(); err != nil {
		t.Fatal(err)
	}
	if last != total || total == 0 {
		t.Fatalf("progress ended at %d of %d", last, total)
	}
	if m.TipSeq != 51 || m.TipID != l.Tip().ID || m.RootHash != l.RootHash() || m.TreeSize != 51 ||
		!strings.HasPrefix(m.Checkpoint, l.Origin()+"\n51\n") || strings.Join(m.Files, ",") != "node.key,wallets" {
		t.Fatalf("manifest %+v", m)
	}
	if got, err := ReadManifest(dest); err != nil || got.TipID != m.TipID {
		t.Fatalf("read manifest: %+v %v", got, err)
	}
	ents, _ := os.ReadDir(data)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), snapshotPrefix) {
			t.Fatalf("snapshot %s left in the data dir", e.Name())
		}
	}

	if _, err := Write(snap, data, nil, dest, now, nil); err == nil {
		t.Fatal("a backup into a non-empty directory succeeded")
	}

	restored := filepath.Join(t.TempDir(), "node")
	if _, err := Restore(dest, restored, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"node.key", filepath.Join("wallets", "ops")} {
		fi, err := os.Stat(filepath.Join(restored, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s restored: %v %v", f, fi, err)
		}
	}
	if _, err := os.Stat(filepath.Join(restored, ManifestName)); err == nil {
		t.Fatal("the manifest was restored into the data dir")
	}
	r, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(restored, "db"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Tip().ID != m.TipID || r.Tip().Seq != m.TipSeq {
		t.Fatalf("restored tip %+v, manifest %d %s", r.Tip(), m.TipSeq, m.TipID)
	}
	if _, err := Restore(dest, restored, nil); err == nil {
		t.Fatal("a restore into a non-empty directory succeeded")
	}
	if _, err := Restore(t.TempDir(), filepath.Join(t.TempDir(), "x"), nil); err == nil || !strings.Contains(err.Error(), "not a backup") {
		t.Fatalf("restore of a directory without a manifest: %v", err)
	}
}

func mustWrite(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
