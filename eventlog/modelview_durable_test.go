package eventlog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestModelViewSeesOnlyDurableWrites holds a group's WAL fsync while a query
// asks for a view. Pebble makes a batch visible to its readers when it is
// applied, before the fsync a Sync commit waits for, so a plain snapshot taken
// then would show writes that a crash of the machine could still take back.
// The view must not: whatever ModelView returns while the fsync is held does
// not hold the group's writes, and once the fsync ends it does.
func TestModelViewSeesOnlyDurableWrites(t *testing.T) {
	var hold atomic.Bool
	gate := make(chan struct{})
	var released atomic.Bool
	injector := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) && strings.HasSuffix(op.Path, ".log") && hold.Load() {
			<-gate
		}
		return nil
	})
	l := openMem(t, Options{Models: flipper{}, FS: errorfs.Wrap(vfs.NewMem(), injector)})
	first := mustAppend(t, l, draft("test.flip", "i", 0))[0].Seq

	hold.Store(true)
	appended := make(chan error, 1)
	go func() {
		_, err := l.Append(context.Background(), draft("test.flip", "i", 1))
		appended <- err
	}()
	// Wait until Pebble shows the group's batch to a plain reader: applied,
	// its fsync held at the gate.
	want := []byte(strconv.FormatUint(first+1, 10))
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, ok, err := dbGet(l.db, l.liveModels().key([]byte("last")))
		if err != nil {
			t.Fatal(err)
		}
		if ok && string(v) == string(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held group never became visible in Pebble")
		}
		time.Sleep(time.Millisecond)
	}

	type result struct {
		last     string
		released bool // whether the fsync had been let go when the view was made
		err      error
	}
	views := make(chan result, 1)
	go func() {
		view, err := l.ModelView()
		if err != nil {
			views <- result{err: err}
			return
		}
		defer view.Close()
		rel := released.Load()
		v, _, err := view.Get([]byte("last"))
		views <- result{last: string(v), released: rel, err: err}
	}()
	var got result
	select {
	case got = <-views: // made while the fsync is held
	case <-time.After(200 * time.Millisecond): // or waiting for it
	}
	released.Store(true)
	hold.Store(false)
	close(gate)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if got == (result{}) {
		got = <-views
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.last == string(want) && !got.released {
		t.Fatalf("a view made while the group's fsync was held shows its write (last = %s)", got.last)
	}
	view, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if v, _, _ := view.Get([]byte("last")); string(v) != string(want) {
		t.Fatalf("after the fsync: last = %q, want %s", v, want)
	}
}

// TestModelViewsShareSnapshotsAndCloseThem: a view keeps the state it was made
// at while commits go on, a view made after a commit sees it, a view closed
// twice gives back one reference only, and however views and commits
// interleave, every snapshot is closed once its last view is: the log closes
// without leaking one, and a view asked for after that is ErrClosed.
func TestModelViewsShareSnapshotsAndCloseThem(t *testing.T) {
	opts := Options{Models: flipper{}, InMemory: true, Key: seedKey(t, vectorSeed)}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	last := func(v *ModelView) string {
		t.Helper()
		b, _, err := v.Get([]byte("last"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	at := mustAppend(t, l, draft("test.flip", "i", 0))[0].Seq
	early, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustAppend(t, l, draft("test.flip", "i", i+1))
	}
	late, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := last(early), strconv.FormatUint(at, 10); got != want {
		t.Errorf("a view made before five commits reads last = %s, want %s", got, want)
	}
	if got, want := last(late), strconv.FormatUint(at+5, 10); got != want {
		t.Errorf("a view made after them reads last = %s, want %s", got, want)
	}
	early.Close()
	// twin shares late's snapshot (no commit between them); closed twice, it
	// must give back one reference only, or the next commit, letting go of the
	// log's own, would close the snapshot under late.
	twin, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	twin.Close()
	twin.Close()
	mustAppend(t, l, draft("test.flip", "i", 6))
	if got, want := last(late), strconv.FormatUint(at+5, 10); got != want {
		t.Errorf("after a twin view closed twice and a commit, late reads last = %s, want %s", got, want)
	}
	late.Close()

	// Views opened and closed from many goroutines while appends commit.
	ctx, stop := context.WithCancel(context.Background())
	var readers sync.WaitGroup
	for range 8 {
		readers.Go(func() {
			for ctx.Err() == nil {
				v, err := l.ModelView()
				if err != nil {
					t.Error(err)
					return
				}
				if _, ok, err := v.Get([]byte("last")); err != nil || !ok {
					t.Errorf("last: %v, %v", ok, err)
				}
				v.Close()
			}
		})
	}
	for i := range 200 {
		mustAppend(t, l, draft("test.flip", "i", i))
	}
	stop()
	readers.Wait()
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := l.ModelView(); !errors.Is(err, ErrClosed) {
		t.Fatalf("ModelView after Close: %v, want ErrClosed", err)
	}
}
