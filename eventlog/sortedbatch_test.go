package eventlog

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSortedBatchLeavesWhatTheWritesInOrderLeave: a group's writes handed to
// Pebble sorted, with only the last write of each key, leave the store as the
// same writes applied one after the other do, and the batch holds one entry a
// key.
func TestSortedBatchLeavesWhatTheWritesInOrderLeave(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		sorted, inOrder := openMemPebble(t), openMemPebble(t)
		var sb sortedBatch
		plain := inOrder.NewBatch()
		keys := map[string]bool{}
		for i := range 1 + rng.IntN(300) {
			k := []byte(fmt.Sprintf("k%03d", rng.IntN(40)))
			keys[string(k)] = true
			if rng.IntN(4) == 0 {
				sb.Delete(k, nil)
				plain.Delete(k, nil)
				continue
			}
			v := []byte(fmt.Sprintf("v%d.%d", round, i))
			sb.Set(k, v, nil)
			plain.Set(k, v, nil)
		}
		b := sorted.NewBatch()
		sb.writeTo(b)
		if got := b.Count(); got != uint32(len(keys)) {
			t.Fatalf("round %d: batch holds %d entries for %d keys", round, got, len(keys))
		}
		if len(sb.ops) != 0 {
			t.Fatalf("round %d: %d writes left for the next group", round, len(sb.ops))
		}
		for _, c := range []*pebble.Batch{b, plain} {
			if err := c.Commit(pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		for k := range 40 {
			key := []byte(fmt.Sprintf("k%03d", k))
			want, wok := getString(t, inOrder, key)
			got, gok := getString(t, sorted, key)
			if got != want || gok != wok {
				t.Fatalf("round %d: %s = %q (%v), in order %q (%v)", round, key, got, gok, want, wok)
			}
		}
	}
}

func openMemPebble(t *testing.T) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func getString(t *testing.T, db *pebble.DB, k []byte) (string, bool) {
	t.Helper()
	v, c, err := db.Get(k)
	if err == pebble.ErrNotFound {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return string(v), true
}

// flipper is a test Folder that writes one key many times in a group: "last"
// holds the newest seq, "tmp" is set on even seqs and deleted on odd ones.
type flipper struct{}

func (flipper) Version() string { return "flip" }

func (flipper) Fold(tx *ModelTxn, ev *Event) error {
	seq := []byte(fmt.Sprint(ev.Seq))
	tx.Set([]byte("last"), seq)
	if ev.Seq%2 == 0 {
		tx.Set([]byte("tmp"), seq)
	} else {
		tx.Delete([]byte("tmp"))
	}
	return nil
}

// TestGroupOfOneKeyWrittenOften: when the events of one group write a key
// again and again, the store, the decisions' reads (through the overlay and
// the model cache) and the queries' reads all hold the last write, whichever
// of a set or a deletion it was, and the overlay is emptied and the cache
// written through as if every write had been settled in turn.
func TestGroupOfOneKeyWrittenOften(t *testing.T) {
	l := openMem(t, Options{Models: flipper{}})
	for _, n := range []int{1, 7, 50, 64} {
		drafts := make([]Draft, n)
		for i := range drafts {
			drafts[i] = draft("test.flip", "i", i)
		}
		evs := mustAppend(t, l, drafts...) // one call: one group
		last := evs[len(evs)-1].Seq
		wantTmp, tmpThere := fmt.Sprint(last), last%2 == 0
		view, err := l.ModelView()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			name string
			get  func([]byte) ([]byte, bool, error)
		}{{"decisions", l.ModelLatest().Get}, {"queries", view.Get}} {
			v, ok, err := r.get([]byte("last"))
			if err != nil || !ok || string(v) != fmt.Sprint(last) {
				t.Errorf("group of %d, %s: last = %q, %v, %v; want %d", n, r.name, v, ok, err, last)
			}
			v, ok, err = r.get([]byte("tmp"))
			if err != nil || ok != tmpThere || (ok && string(v) != wantTmp) {
				t.Errorf("group of %d, %s: tmp = %q, %v, %v; want %q present %v", n, r.name, v, ok, err, wantTmp, tmpThere)
			}
		}
		view.Close()
		// Settled: nothing left in the overlay, and the cache written through
		// with the last value.
		sp := l.liveModels()
		sp.mu.RLock()
		left, cached := len(sp.overlay), sp.cache["last"]
		sp.mu.RUnlock()
		if left != 0 {
			t.Errorf("group of %d: %d writes left in the overlay after the commit", n, left)
		}
		if string(cached.value) != fmt.Sprint(last) {
			t.Errorf("group of %d: cache holds last = %q, want %d", n, cached.value, last)
		}
	}
}
