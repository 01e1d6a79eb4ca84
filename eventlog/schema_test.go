package eventlog

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// rawStore opens the store in dir with Pebble alone, runs f on it and closes it.
func rawStore(t *testing.T, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenMovesSchemaOneStore: a store written by a build of schema 1 has an
// id → seq index and says "1". Open drops the index and says "2" in one batch,
// and the log then verifies, appends and reopens as any other.
func TestOpenMovesSchemaOneStore(t *testing.T) {
	dir, key := t.TempDir(), seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for i := 2; i <= 10; i++ {
		evs = append(evs, mustAppend(t, l, draft("test.numbered", "n", i))[0])
	}
	l.Close()
	// What schema 1 wrote beside each event.
	rawStore(t, dir, func(db *pebble.DB) {
		b := db.NewBatch()
		for _, ev := range evs {
			id, err := hex.DecodeString(ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			b.Set(append([]byte{spaceRetiredID}, id...), appendU64(nil, ev.Seq), nil)
		}
		b.Set(metaSchemaKey, []byte("1"), nil)
		if err := b.Commit(pebble.Sync); err != nil {
			t.Fatal(err)
		}
	})

	l, err = Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatalf("open a schema 1 store: %v", err)
	}
	if _, err := l.Verify(context.Background(), nil); err != nil {
		t.Fatalf("verify after the move: %v", err)
	}
	mustAppend(t, l, draft("test.numbered", "n", 11))
	l.Close()
	rawStore(t, dir, func(db *pebble.DB) {
		v, closer, err := db.Get(metaSchemaKey)
		if err != nil {
			t.Fatal(err)
		}
		if string(v) != schemaVersion || schemaVersion != "2" {
			t.Errorf("schema = %q after the move, want \"2\"", v)
		}
		closer.Close()
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceRetiredID}, UpperBound: []byte{spaceRetiredID + 1}})
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			t.Errorf("key %x of the retired id index is still there", it.Key())
		}
		it.Close()
	})
	l, err = Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatalf("reopen after the move: %v", err)
	}
	defer l.Close()
	if tip := l.Tip().Seq; tip != 11 {
		t.Fatalf("tip = %d after the move, want 11", tip)
	}
}

// TestOpenRefusesNewerSchema: a store of a layout this build does not know is
// refused, never written into.
func TestOpenRefusesNewerSchema(t *testing.T) {
	dir, key := t.TempDir(), seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, draft("test.numbered", "n", 2))
	l.Close()
	rawStore(t, dir, func(db *pebble.DB) {
		if err := db.Set(metaSchemaKey, []byte("3"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := Open(Options{Dir: dir, Key: key}); err == nil || !strings.Contains(err.Error(), `schema version "3", want "2"`) {
		t.Fatalf("Open of a schema 3 store: err = %v", err)
	}
	rawStore(t, dir, func(db *pebble.DB) {
		v, closer, err := db.Get(metaSchemaKey)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		if string(v) != "3" {
			t.Fatalf("schema = %q after a refused Open, want it untouched", v)
		}
	})
}
