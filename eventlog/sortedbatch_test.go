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
