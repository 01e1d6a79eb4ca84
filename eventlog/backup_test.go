package eventlog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestBackupWhileAppending: a backup taken while 8 writers append is a store
// that opens with the same key at exactly the tip Backup reported, verifies
// from genesis, and holds the models and tree of that tip.
func TestBackupWhileAppending(t *testing.T) {
	dir := t.TempDir()
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: filepath.Join(dir, "db"), Key: key, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, draft("test.seq", "i", 0))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Append(context.Background(), draft("test.seq", "w", w, "i", i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for l.Tip().Seq < 300 {
		mustAppend(t, l, draft("test.seq"))
	}
	backupDir := filepath.Join(dir, "backup")
	b, err := l.Backup(backupDir)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if b.Tip.Seq < 300 || b.Root != l.RootHash() || b.Tree.Size != int64(b.Tip.Seq) || len(b.Checkpoint) == 0 {
		t.Fatalf("backup %+v", b)
	}
	if _, err := l.Backup(backupDir); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second backup into the same directory: %v, want fs.ErrExist", err)
	}

	c, err := Open(Options{Dir: backupDir, Key: key, Models: &counter{version: "1"}, TailCheck: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Tip() != b.Tip {
		t.Fatalf("copy's tip %+v, backup reported %+v", c.Tip(), b.Tip)
	}
	if _, err := c.Verify(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := viewCount(t, c); n != b.Tip.Seq {
		t.Fatalf("copy's models folded %d events, want %d", n, b.Tip.Seq)
	}
	head, note, err := c.TreeCheckpoint()
	if err != nil || head != b.Tree || string(note) != string(b.Checkpoint) {
		t.Fatalf("copy's tree %+v, backup reported %+v (%v)", head, b.Tree, err)
	}
	if _, err := os.Stat(filepath.Join(backupDir, "LOCK")); err != nil {
		t.Fatalf("the copy is not a Pebble store: %v", err)
	}
}
