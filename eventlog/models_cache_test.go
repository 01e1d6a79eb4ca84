package eventlog

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestModelCacheIsBounded: the model cache takes every committed value
// (write-through) and stays within its byte bound, whatever is written; a
// value too large for it is not kept, and a deletion updates a cached key.
func TestModelCacheIsBounded(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const max = 64 << 10
	s := newModelSpace(db, spaceModelsA, max)
	value := make([]byte, 300)
	for i := range 2000 {
		k := fmt.Sprintf("k%05d", i)
		s.settle([]modelWrite{{key: k, modelEntry: modelEntry{value: value, seq: uint64(i + 1)}}})
		if _, ok := s.cache[k]; !ok {
			t.Fatalf("%s: not in the cache after its commit", k)
		}
		var sum int64
		for k, e := range s.cache {
			sum += cachedSize(k, e)
		}
		if sum != s.cacheBytes || sum > max {
			t.Fatalf("after %d writes: cache holds %d bytes, counts %d, bound %d", i+1, sum, s.cacheBytes, max)
		}
	}
	s.settle([]modelWrite{{key: "big", modelEntry: modelEntry{value: make([]byte, max/4), seq: 3000}}})
	if _, ok := s.cache["big"]; ok {
		t.Error("a value of a quarter of the cache was kept")
	}
	s.settle([]modelWrite{{key: "k01999", modelEntry: modelEntry{deleted: true, seq: 3001}}})
	if v, ok, err := s.get([]byte("k01999")); err != nil || ok || v != nil {
		t.Errorf("deleted key reads %q, %v, %v", v, ok, err)
	}
	// A key read and found absent is cached as absent.
	if _, ok, err := s.get([]byte("absent")); err != nil || ok {
		t.Fatalf("absent key: %v, %v", ok, err)
	}
	if e, ok := s.cache["absent"]; !ok || !e.deleted {
		t.Errorf("absent key cached as %+v, %v", e, ok)
	}
}
