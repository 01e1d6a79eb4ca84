package statemap

import (
	"fmt"
	"math/rand/v2"
	"reflect"
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

// checkCache: every record c holds is the store's.
func checkCache(t *testing.T, c *Cache, s *MemStore) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.m {
		w, ok, err := s.Get([]byte(k))
		if err != nil || !ok || string(w) != string(v) {
			t.Fatalf("cache holds %x = %x, store %x (%v)", k, v, w, ok)
		}
	}
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
