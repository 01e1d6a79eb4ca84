package eventlog

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// counter is a test Folder: key "n" counts the events folded, key "seq/<seq>"
// records each seq, and a fold of "test.refuse" writes and then rolls back. With
// double set it counts each event twice: a different schema.
type counter struct {
	version string
	double  bool
	folds   atomic.Int64
	failAt  uint64 // Fold errors at this seq; 0 never
}

func (c *counter) Version() string { return c.version }

func (c *counter) Fold(tx *ModelTxn, ev *Event) error {
	c.folds.Add(1)
	if c.failAt != 0 && ev.Seq == c.failAt {
		return errors.New("injected model store failure")
	}
	mark := tx.Mark()
	v, _, err := tx.Get([]byte("n"))
	if err != nil {
		return err
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	step := uint64(1)
	if c.double {
		step = 2
	}
	tx.Set([]byte("n"), binary.BigEndian.AppendUint64(nil, n+step))
	tx.Set([]byte("seq/"+strconv.FormatUint(ev.Seq, 10)), []byte(ev.Type))
	if ev.Type == "test.refuse" {
		tx.Rollback(mark)
	}
	if ev.Type == "test.reserved" {
		tx.Set([]byte{0, 'x'}, []byte("meta is the log's"))
	}
	return nil
}

func viewCount(t *testing.T, l *Log) uint64 {
	t.Helper()
	v, err := l.ModelView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	b, ok, err := v.Get([]byte("n"))
	if err != nil || !ok {
		t.Fatalf("get n: %v %v", ok, err)
	}
	return binary.BigEndian.Uint64(b)
}

// TestModelsFoldEveryEventOnce: every durable event reaches the models once, in
// chain order, genesis included; a rolled-back fold leaves no trace; a query
// view sees exactly the durable events.
func TestModelsFoldEveryEventOnce(t *testing.T) {
	c := &counter{version: "1"}
	l := openMem(t, Options{Models: c})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Append(context.Background(), draft("test.seq", "i", i), draft("test.seq", "i", i))
			l.Append(context.Background(), Draft{Type: "Bad"})
		}()
	}
	wg.Wait()
	mustAppend(t, l, draft("test.refuse"))
	if got := viewCount(t, l); got != 41 {
		t.Fatalf("n = %d, want 41 (genesis and 40 events; the refused one rolled back)", got)
	}
	v, _ := l.ModelView()
	defer v.Close()
	var seqs []string
	v.Scan([]byte("seq/"), PrefixEnd([]byte("seq/")), false, func(k, _ []byte) (bool, error) {
		seqs = append(seqs, string(k))
		return true, nil
	})
	if len(seqs) != 41 {
		t.Fatalf("%d seq keys, want 41", len(seqs))
	}
}

// TestModelsDecideSeesEarlierDecisions: a decision reads the effect of every
// decision before it, durable or not, so no two decisions read the same count.
func TestModelsDecideSeesEarlierDecisions(t *testing.T) {
	c := &counter{version: "1"}
	l := openMem(t, Options{Models: c})
	seen := sync.Map{}
	var wg sync.WaitGroup
	var dup atomic.Int64
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Decide(context.Background(), func() ([]Draft, error) {
				v, _, err := l.ModelLatest().Get([]byte("n"))
				if err != nil {
					return nil, err
				}
				if _, loaded := seen.LoadOrStore(string(v), true); loaded {
					dup.Add(1)
				}
				return []Draft{draft("test.decided")}, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if dup.Load() != 0 {
		t.Fatalf("%d decisions read a count another decision had read", dup.Load())
	}
	if got := viewCount(t, l); got != 65 {
		t.Fatalf("n = %d, want 65", got)
	}
}

// TestModelsCatchUpAtOpen: models whose watermark is behind the chain (the log
// was written without them) apply only the tail at Open.
func TestModelsCatchUpAtOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	key := seedKey(t, vectorSeed)
	c := &counter{version: "1"}
	l, err := Open(Options{Dir: dir, Key: key, Models: c})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		mustAppend(t, l, draft("test.a"))
	}
	l.Close()
	l, err = Open(Options{Dir: dir, Key: key}) // no models: they fall behind
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustAppend(t, l, draft("test.b"))
	}
	l.Close()
	c2 := &counter{version: "1"}
	l, err = Open(Options{Dir: dir, Key: key, Models: c2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := c2.folds.Load(); got != 5 {
		t.Fatalf("catch-up folded %d events, want the 5 of the tail", got)
	}
	if got := viewCount(t, l); got != 16 {
		t.Fatalf("n = %d, want 16", got)
	}
}

// TestModelsVersionBumpRebuilds: a new schema version rebuilds the models from
// the chain at Open, reporting progress, and the old state is gone.
func TestModelsVersionBumpRebuilds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		mustAppend(t, l, draft("test.a"))
	}
	l.Close()
	var last uint64
	l, err = Open(Options{Dir: dir, Key: key, Models: &counter{version: "2", double: true},
		OnRebuild: func(done, total uint64) { last = done }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if last != 11 {
		t.Fatalf("progress ended at %d, want 11", last)
	}
	if got := viewCount(t, l); got != 22 {
		t.Fatalf("n = %d, want 22 (every event counted twice by version 2)", got)
	}
}

// TestModelsInterruptedRebuildResumes: a rebuild that stops between batches
// (here: the store fails) leaves the old models live, and the next Open resumes
// the rebuild from its last batch instead of starting over.
func TestModelsInterruptedRebuildResumes(t *testing.T) {
	defer func(n int) { rebuildBatchEvents = n }(rebuildBatchEvents)
	rebuildBatchEvents = 10
	dir := filepath.Join(t.TempDir(), "db")
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 49 {
		mustAppend(t, l, draft("test.a"))
	}
	l.Close()
	if _, err := Open(Options{Dir: dir, Key: key, Models: &counter{version: "2", double: true, failAt: 35}}); err == nil {
		t.Fatal("open with a failing rebuild succeeded")
	}
	c := &counter{version: "2", double: true}
	l, err = Open(Options{Dir: dir, Key: key, Models: c})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := c.folds.Load(); got != 20 {
		t.Fatalf("resumed rebuild folded %d events, want 20 (seq 31..50)", got)
	}
	if got := viewCount(t, l); got != 100 {
		t.Fatalf("n = %d, want 100", got)
	}
}

// TestRebuildModelsReportsDifferences: a damaged live model is found by the
// rebuild and replaced by the chain's answer.
func TestRebuildModelsReportsDifferences(t *testing.T) {
	l := openMem(t, Options{Models: &counter{version: "1"}})
	for range 5 {
		mustAppend(t, l, draft("test.a"))
	}
	d, err := l.RebuildModels(context.Background(), nil)
	if err != nil || !d.Same() || d.Keys == 0 {
		t.Fatalf("rebuild of intact models: %+v, %v", d, err)
	}
	sp := l.liveModels()
	if err := l.db.Set(sp.key([]byte("n")), binary.BigEndian.AppendUint64(nil, 99), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.db.Set(sp.key([]byte("stray")), []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	d, err = l.RebuildModels(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Changed != 1 || d.Missing != 1 || d.Extra != 0 || len(d.Examples) != 2 {
		t.Fatalf("diff = %+v, want one changed and one missing key", d)
	}
	if got := viewCount(t, l); got != 6 {
		t.Fatalf("n after rebuild = %d, want 6", got)
	}
	mustAppend(t, l, draft("test.a"))
	if got := viewCount(t, l); got != 7 {
		t.Fatalf("n after an append on the rebuilt models = %d, want 7", got)
	}
}

// TestModelsReservedKeyFailsTheLog: a fold that writes under the space's
// metadata keys is a bug in the folder; the log fails stop instead of writing.
func TestModelsReservedKeyFailsTheLog(t *testing.T) {
	l := openMem(t, Options{Models: &counter{version: "1"}})
	if _, err := l.Append(context.Background(), draft("test.reserved")); !errors.Is(err, ErrFailed) {
		t.Fatalf("append = %v, want ErrFailed", err)
	}
	if l.Healthy() == nil {
		t.Fatal("the log is still healthy")
	}
	if got := viewCount(t, l); got != 1 {
		t.Fatalf("n = %d, want 1 (genesis only)", got)
	}
}
