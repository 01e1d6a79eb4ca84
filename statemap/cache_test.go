package statemap

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestCacheRounds updates a map in rounds through a Cache, small enough to
// evict and large enough to hold it all, beside the same map without one:
// the roots, counts and proofs agree every round, the cache keeps within
// its bound, and its records are those of the store.
func TestCacheRounds(t *testing.T) {
	for _, bound := range []int{4 << 10, 4 << 20} {
		t.Run(fmt.Sprintf("bound=%d", bound), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(bound)))
			plain, store := new(MemStore), new(MemStore)
			c := NewCache(bound)
			var root Hash
			for round := range 30 {
				cs := make([]Change, 0, 50)
				seen := map[int]bool{}
				for range 50 {
					i := rng.IntN(300)
					if seen[i] {
						continue
					}
					seen[i] = true
					k := HashKey(fmt.Sprintf("mission/%d", i))
					if rng.IntN(4) == 0 {
						cs = append(cs, Change{KeyHash: k, Delete: true})
					} else {
						cs = append(cs, Change{KeyHash: k, ValueHash: HashValue(fmt.Appendf(nil, "%d/%d", i, rng.IntN(3)))})
					}
				}
				want, wantN, err := Update(plain, plain, cs)
				if err != nil {
					t.Fatal(err)
				}
				// The writes reach the store only when committed, as a
				// batch does, after the walk.
				batch := newBatch(t, store)
				cw := c.Writer(batch)
				got, gotN, err := Update(c.Reader(store, root), cw, cs)
				if err != nil {
					t.Fatal(err)
				}
				batch.commit()
				cw.Committed(root, got)
				if got != want || gotN != wantN {
					t.Fatalf("round %d: root %s (%d entries) through the cache, %s (%d) without", round, got, gotN, want, wantN)
				}
				root = got
				for i := range 310 {
					k := HashKey(fmt.Sprintf("mission/%d", i))
					p, err := Prove(c.Reader(store, root), k)
					if err != nil {
						t.Fatal(err)
					}
					if q, err := Prove(plain, k); err != nil || !reflect.DeepEqual(p, q) {
						t.Fatalf("round %d: proof of %s through the cache\n%s\nwithout\n%s (%v)", round, k, proofText(p), proofText(q), err)
					}
				}
				if c.Bytes() > bound {
					t.Fatalf("round %d: the cache holds %d bytes, bound %d", round, c.Bytes(), bound)
				}
				checkCache(t, c, store)
			}
		})
	}
}

// checkCache: every record c holds is the store's, filed under its level.
func checkCache(t *testing.T, c *Cache, s *MemStore) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	filed := 0
	for l, keys := range c.levels {
		for k := range keys {
			if _, ok := c.m[k]; !ok || cacheLevel(k) != l {
				t.Fatalf("level %d files %x (held %v, its level %d)", l, k, ok, cacheLevel(k))
			}
		}
		filed += len(keys)
	}
	if filed != len(c.m) {
		t.Fatalf("the levels file %d records, the cache holds %d", filed, len(c.m))
	}
	for k, v := range c.m {
		w, ok, err := s.Get([]byte(k))
		if err != nil || !ok || string(w) != string(v) {
			t.Fatalf("cache holds %x = %x, store %x (%v)", k, v, w, ok)
		}
	}
}

// TestCacheKeepsUpperLevels: a cache too small for a tree, read by a proof
// of every entry, holds whole levels from the root down and part of one
// more, nothing below it; the levels every walk reads stay in memory.
func TestCacheKeepsUpperLevels(t *testing.T) {
	s := new(MemStore)
	var cs []Change
	for i := range 4000 {
		cs = append(cs, Put(fmt.Sprintf("mission/%d", i), []byte("v")))
	}
	slices.SortFunc(cs, func(a, b Change) int { return bytes.Compare(a.KeyHash[:], b.KeyHash[:]) })
	root, _, err := Update(s, s, cs)
	if err != nil {
		t.Fatal(err)
	}
	perLevel := map[int]int{}
	for k := range s.All() {
		if cached(k) {
			perLevel[cacheLevel(string(k))]++
		}
	}
	c := NewCache(64 << 10)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, i := range rng.Perm(len(cs)) {
		if _, err := Prove(c.Reader(s, root), cs[i].KeyHash); err != nil {
			t.Fatal(err)
		}
	}
	checkCache(t, c, s)
	if c.Bytes() > 64<<10 {
		t.Fatalf("the cache holds %d bytes, bound %d", c.Bytes(), 64<<10)
	}
	partial := -1
	for l := range c.levels {
		held, all := len(c.levels[l]), perLevel[l]
		switch {
		case held == all:
		case partial >= 0 && held > 0:
			t.Fatalf("level %d: %d of %d records held below level %d, which is partly held", l, held, all, partial)
		case partial < 0:
			partial = l
		}
	}
	if partial < 4 {
		t.Fatalf("the cache holds whole levels only down to %d", partial)
	}
	t.Logf("whole levels 0..%d, %d of %d of level %d, %d bytes", partial-1, len(c.levels[partial]), perLevel[partial], partial, c.Bytes())
}

// TestCacheOtherRoot: a reader of another root than the cache holds reads
// its own store, never the cache's records, and adds none to it.
func TestCacheOtherRoot(t *testing.T) {
	older, newer := new(MemStore), new(MemStore)
	var cs []Change
	for i := range 200 {
		cs = append(cs, Put(fmt.Sprintf("mission/%d", i), []byte("a")))
	}
	oldRoot, _, err := Update(older, older, cs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		cs[i] = Put(fmt.Sprintf("mission/%d", i), []byte("b"))
	}
	newRoot, _, err := Update(newer, newer, cs)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(1 << 20)
	for _, ch := range cs {
		if _, err := Prove(c.Reader(newer, newRoot), ch.KeyHash); err != nil {
			t.Fatal(err)
		}
	}
	held := c.Bytes()
	if held == 0 {
		t.Fatal("the cache kept nothing of its reader's walks")
	}
	for _, ch := range cs {
		p, err := Prove(c.Reader(older, oldRoot), ch.KeyHash)
		if err != nil {
			t.Fatal(err)
		}
		if q, err := Prove(older, ch.KeyHash); err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("proof of %s at the older root through the cache\n%s\nfrom its store\n%s", ch.KeyHash, proofText(p), proofText(q))
		}
	}
	if c.Bytes() != held {
		t.Fatalf("the cache went from %d to %d bytes on another root's reads", held, c.Bytes())
	}
	checkCache(t, c, newer)
}
