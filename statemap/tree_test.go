package statemap

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// keyWithBits finds a key "mission/<n>" whose hash begins with the bits
// given, so that a test names a tree's shape and still uses real keys.
func keyWithBits(t *testing.T, bits ...int) string {
	t.Helper()
	for n := 0; n < 1<<16; n++ {
		key := fmt.Sprintf("mission/m%d", n)
		k := HashKey(key)
		ok := true
		for i, b := range bits {
			ok = ok && k.Bit(i) == b
		}
		if ok {
			return key
		}
	}
	t.Fatalf("no key begins with %v", bits)
	return ""
}

func sum(parts ...[]byte) Hash {
	return sha256.Sum256(slices.Concat(parts...))
}

func mustUpdate(t *testing.T, s *MemStore, cs ...Change) Hash {
	t.Helper()
	root, _, err := Update(s, s, cs)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSmallTrees checks roots and proofs written out by hand from the
// definition: the empty map, one entry, two entries apart at bit 0, and two
// entries that share their first three bits, whose root folds the node of
// the two up past three empty siblings.
func TestSmallTrees(t *testing.T) {
	zero := make([]byte, 32)
	t.Run("empty", func(t *testing.T) {
		s := new(MemStore)
		root, n, err := Root(s)
		if err != nil || root != (Hash{}) || n != 0 {
			t.Fatalf("empty store: root %s, %d entries, %v", root, n, err)
		}
		p, err := Prove(s, HashKey("identity/did:key:z6Mk"))
		if err != nil || len(p.Siblings) != 0 || p.Siblings == nil || p.KeyHash != nil {
			t.Fatalf("proof in an empty map: %s, %v", proofText(p), err)
		}
		if err := Verify(Hash{}, "identity/did:key:z6Mk", nil, p); err != nil {
			t.Fatal(err)
		}
		if err := Verify(Hash{}, "identity/did:key:z6Mk", []byte("{}"), p); !errors.Is(err, ErrProofMismatch) {
			t.Fatalf("membership in an empty map: %v", err)
		}
	})
	t.Run("one entry", func(t *testing.T) {
		s := new(MemStore)
		key, value := "identity/did:key:z6Mk", []byte(`{"credits":5}`)
		k, v := sha256.Sum256([]byte(key)), sha256.Sum256(value)
		want := sum([]byte{0}, k[:], v[:])
		if root := mustUpdate(t, s, Put(key, value)); root != want {
			t.Fatalf("root %s, want %s", root, want)
		}
		p, err := Prove(s, k)
		if err != nil || len(p.Siblings) != 0 || p.KeyHash != nil {
			t.Fatalf("membership proof %s, %v", proofText(p), err)
		}
		if err := Verify(want, key, value, p); err != nil {
			t.Fatal(err)
		}
		p, err = Prove(s, HashKey("mission/none"))
		if err != nil || len(p.Siblings) != 0 || p.KeyHash == nil || *p.KeyHash != k || *p.ValueHash != v {
			t.Fatalf("absence proof %s, %v", proofText(p), err)
		}
		if err := Verify(want, "mission/none", nil, p); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("two apart at bit 0", func(t *testing.T) {
		s := new(MemStore)
		left, right := keyWithBits(t, 0), keyWithBits(t, 1)
		lk, rk := sha256.Sum256([]byte(left)), sha256.Sum256([]byte(right))
		lv, rv := sha256.Sum256([]byte("L")), sha256.Sum256([]byte("R"))
		ll, rl := sum([]byte{0}, lk[:], lv[:]), sum([]byte{0}, rk[:], rv[:])
		want := sum([]byte{1}, ll[:], rl[:])
		if root := mustUpdate(t, s, Put(right, []byte("R")), Put(left, []byte("L"))); root != want {
			t.Fatalf("root %s, want %s", root, want)
		}
		p, err := Prove(s, lk)
		if err != nil || !slices.Equal(p.Siblings, []Hash{rl}) || p.KeyHash != nil {
			t.Fatalf("proof of the left entry %s, %v", proofText(p), err)
		}
		if err := Verify(want, left, []byte("L"), p); err != nil {
			t.Fatal(err)
		}
		if err := Verify(want, left, []byte("R"), p); !errors.Is(err, ErrProofMismatch) {
			t.Fatalf("changed value: %v", err)
		}
	})
	t.Run("two sharing three bits", func(t *testing.T) {
		s := new(MemStore)
		a, b := keyWithBits(t, 1, 0, 1, 0), keyWithBits(t, 1, 0, 1, 1)
		ak, bk := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
		av, bv := sha256.Sum256([]byte("A")), sha256.Sum256([]byte("B"))
		al, bl := sum([]byte{0}, ak[:], av[:]), sum([]byte{0}, bk[:], bv[:])
		n3 := sum([]byte{1}, al[:], bl[:])  // depth 3 branches
		n2 := sum([]byte{1}, zero, n3[:])   // bit 2 is 1
		n1 := sum([]byte{1}, n2[:], zero)   // bit 1 is 0
		want := sum([]byte{1}, zero, n1[:]) // bit 0 is 1
		if root := mustUpdate(t, s, Put(a, []byte("A")), Put(b, []byte("B"))); root != want {
			t.Fatalf("root %s, want %s", root, want)
		}
		p, err := Prove(s, bk)
		if err != nil || !slices.Equal(p.Siblings, []Hash{{}, {}, {}, al}) {
			t.Fatalf("proof of b %s, %v", proofText(p), err)
		}
		if err := Verify(want, b, []byte("B"), p); err != nil {
			t.Fatal(err)
		}
		// A key that leaves the pair's path at bit 1 finds an empty
		// subtree at depth 2, beside the pair's subtree.
		c := keyWithBits(t, 1, 1)
		p, err = Prove(s, HashKey(c))
		if err != nil || !slices.Equal(p.Siblings, []Hash{{}, n2}) || p.KeyHash != nil {
			t.Fatalf("proof of c %s, %v", proofText(p), err)
		}
		if err := Verify(want, c, nil, p); err != nil {
			t.Fatal(err)
		}
		// Removing one leaves the other's leaf as the root, and removing
		// both leaves nothing stored but the root record.
		if root := mustUpdate(t, s, Remove(a)); root != bl {
			t.Fatalf("root %s after removing a, want b's leaf %s", root, bl)
		}
		if root := mustUpdate(t, s, Remove(b)); root != (Hash{}) || s.Len() != 1 {
			t.Fatalf("root %s and %d records after removing both", root, s.Len())
		}
	})
}

// TestUpdateIdle: a batch that changes nothing writes nothing, and one that
// names a key twice is refused before writing.
func TestUpdateIdle(t *testing.T) {
	s := new(MemStore)
	root := mustUpdate(t, s, Put("mission/a", []byte("1")), Put("mission/b", []byte("2")))
	w := new(MemStore)
	got, n, err := Update(s, w, []Change{Put("mission/a", []byte("1")), Remove("mission/c")})
	if err != nil || got != root || n != 2 || w.Len() != 0 {
		t.Fatalf("idle batch: root %s (was %s), %d entries, %d writes, %v", got, root, n, w.Len(), err)
	}
	_, _, err = Update(s, w, []Change{Put("mission/c", []byte("1")), Remove("mission/c")})
	if !errors.Is(err, ErrDuplicateChange) || w.Len() != 0 {
		t.Fatalf("duplicate: %v, %d writes", err, w.Len())
	}
}

// TestUpdateMatchesReference grows, changes and shrinks a map of real keys
// in batches of several sizes, holding it to the reference after each.
func TestUpdateMatchesReference(t *testing.T) {
	s := new(MemStore)
	m := make(map[Hash]Hash)
	var absent []Hash
	for i := range 20 {
		absent = append(absent, HashKey(fmt.Sprintf("identity/absent-%d", i)))
	}
	step := 0
	apply := func(cs []Change) {
		t.Helper()
		mustUpdate(t, s, cs...)
		for _, c := range cs {
			if c.Delete {
				delete(m, c.KeyHash)
			} else {
				m[c.KeyHash] = c.ValueHash
			}
		}
		checkMap(t, s, m, keysOf(m, absent...))
		step++
	}
	for round := range 4 {
		var cs []Change
		for i := range 25 * (round + 1) {
			cs = append(cs, Put(fmt.Sprintf("mission/%d", i*3+round), []byte(fmt.Sprint(round))))
		}
		apply(cs)
	}
	for i := 0; i < 100; i += 13 {
		apply([]Change{Remove(fmt.Sprintf("mission/%d", i)), Put(fmt.Sprintf("mission/%d", i+1), []byte("x"))})
	}
	var all []Change
	for k := range m {
		all = append(all, Change{KeyHash: k, Delete: true})
	}
	apply(all)
	if s.Len() != 1 {
		t.Fatalf("%d records left in an emptied map", s.Len())
	}
}

// TestApplyReleases: an entry keeps the locator of the change that set its
// value, and Apply releases each locator no entry holds any longer: the
// entry's old one when its value changes or it goes, and those of changes
// that change nothing or remove.
func TestApplyReleases(t *testing.T) {
	s := new(MemStore)
	k1, k2, k3 := HashKey("mission/1"), HashKey("mission/2"), HashKey("mission/3")
	a, b := HashValue([]byte("a")), HashValue([]byte("b"))
	apply := func(cs ...Change) []Entry {
		t.Helper()
		o, err := Apply(s, s, cs)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(o.Released, func(x, y Entry) int { return int(x.Loc) - int(y.Loc) })
		return o.Released
	}
	locOf := func(k Hash) (uint64, bool) {
		t.Helper()
		_, loc, ok, err := Lookup(s, k)
		if err != nil {
			t.Fatal(err)
		}
		return loc, ok
	}
	if got := apply(Change{KeyHash: k1, ValueHash: a, Loc: 1}, Change{KeyHash: k2, ValueHash: a, Loc: 2}); len(got) != 0 {
		t.Fatalf("new entries released %v", got)
	}
	got := apply(Change{KeyHash: k1, ValueHash: b, Loc: 3}, Change{KeyHash: k2, ValueHash: a, Loc: 4}, Change{KeyHash: k3, Delete: true, Loc: 5})
	want := []Entry{{KeyHash: k1, ValueHash: a, Loc: 1}, {KeyHash: k2, ValueHash: a, Loc: 4}, {KeyHash: k3, Loc: 5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("released %+v, want %+v", got, want)
	}
	if loc, ok := locOf(k1); !ok || loc != 3 {
		t.Fatalf("mission/1 at locator %d (%v), want 3", loc, ok)
	}
	if loc, ok := locOf(k2); !ok || loc != 2 {
		t.Fatalf("mission/2 set to the value it had moved to locator %d (%v), want 2", loc, ok)
	}
	got = apply(Change{KeyHash: k1, Delete: true, Loc: 6})
	if want := []Entry{{KeyHash: k1, ValueHash: b, Loc: 3}, {KeyHash: k1, Loc: 6}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("released %+v, want %+v", got, want)
	}
	if _, ok := locOf(k1); ok {
		t.Fatal("mission/1 is still held after its removal")
	}
}
