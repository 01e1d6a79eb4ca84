package eventlog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestNextGroupAppliedDuringFsync holds one group's WAL fsync. The committer
// applies the next group meanwhile (its two stages overlap), yet neither
// group's caller is released, the tip does not move and a view shows
// neither. The held fsync then fails: both groups fail, the second too,
// whatever its own fsync reports, since it was written after the failure.
func TestNextGroupAppliedDuringFsync(t *testing.T) {
	var hold atomic.Bool
	gate, stop := make(chan error), make(chan struct{})
	injector := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) && strings.HasSuffix(op.Path, ".log") && hold.Load() {
			select {
			case err := <-gate:
				return err
			case <-stop:
				return errors.New("test over")
			}
		}
		return nil
	})
	l := openMem(t, Options{Models: flipper{}, FS: errorfs.Wrap(vfs.NewMem(), injector)})
	t.Cleanup(func() { close(stop) }) // before the log closes, should the test stop early
	first := mustAppend(t, l, draft("test.flip", "i", 0))[0].Seq

	// visible waits until Pebble shows a plain reader the write of seq.
	visible := func(seq uint64) {
		t.Helper()
		want := strconv.FormatUint(seq, 10)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			v, ok, err := dbGet(l.db, l.liveModels().key([]byte("last")))
			if err != nil {
				t.Fatal(err)
			}
			if ok && string(v) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("seq %d never became visible in Pebble", seq)
			}
		}
	}
	results := make(chan error, 2)
	appendOne := func(i int) {
		go func() {
			_, err := l.Append(context.Background(), draft("test.flip", "i", i))
			results <- err
		}()
	}
	hold.Store(true)
	appendOne(1)
	visible(first + 1)
	appendOne(2)
	visible(first + 2) // applied while the first group's fsync is held

	select {
	case err := <-results:
		t.Fatalf("a caller was released while its fsync was held (err = %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if tip := l.Tip().Seq; tip != first {
		t.Fatalf("tip = %d while the fsync is held, want %d", tip, first)
	}
	view, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := view.Get([]byte("last")); string(v) != strconv.FormatUint(first, 10) {
		t.Fatalf("a view made while the fsync is held shows last = %s, want %d", v, first)
	}
	view.Close()

	hold.Store(false) // any later fsync succeeds
	gate <- errors.New("injected fsync failure")
	for range 2 {
		if err := <-results; !errors.Is(err, ErrFailed) {
			t.Fatalf("append behind a failed fsync: err = %v, want ErrFailed", err)
		}
	}
	if l.Healthy() == nil {
		t.Fatal("log still healthy after a failed fsync")
	}
	if tip := l.Tip().Seq; tip != first {
		t.Fatalf("tip = %d after the failed fsync, want %d", tip, first)
	}
	view, err = l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if v, _, _ := view.Get([]byte("last")); string(v) != strconv.FormatUint(first, 10) {
		t.Fatalf("after the failed fsync a view shows last = %s, want %d", v, first)
	}
}
