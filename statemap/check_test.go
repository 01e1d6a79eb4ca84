package statemap

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// checkMap holds the store s, after updates, to the map m by the reference:
// the root and count, exactly the entry and node records m needs, and for
// each key of prove the reference's proof (of membership or absence), which
// verifies, and no tampered form of it.
func checkMap(t testing.TB, s *MemStore, m map[Hash]Hash, prove []Hash) {
	t.Helper()
	root, n, err := Root(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := refRoot(m); root != want {
		t.Fatalf("root %s, reference %s", root, want)
	}
	if n != uint64(len(m)) {
		t.Fatalf("%d entries, map has %d", n, len(m))
	}
	checkRecords(t, s, m)
	for _, k := range prove {
		if v, ok := m[k]; ok {
			checkProof(t, s, root, m, k, &v)
		} else {
			checkProof(t, s, root, m, k, nil)
		}
	}
}

// keysOf is m's keys followed by more.
func keysOf(m map[Hash]Hash, more ...Hash) []Hash {
	keys := make([]Hash, 0, len(m)+len(more))
	for k := range m {
		keys = append(keys, k)
	}
	return append(keys, more...)
}

// checkRecords: the store holds one node record per branching subtree with
// its hash, the root record when m was ever written, and nothing else: no
// record outlives the subtree it was for. Every entry of m is where its key
// leads, with its value hash.
func checkRecords(t testing.TB, s *MemStore, m map[Hash]Hash) {
	t.Helper()
	branches := refBranches(m)
	nodes := 0
	for k, v := range m {
		got, _, ok, err := Lookup(s, k)
		if err != nil || !ok || got != v {
			t.Fatalf("entry %s: the tree holds %s (%v, %v), the map %s", k, got, ok, err, v)
		}
	}
	for key, value := range s.All() {
		switch key[0] {
		case nodeTag:
			want, ok := branches[string(key)]
			if !ok || len(key) < 2 {
				t.Fatalf("node record %x, reference %x (%v)", key, want, ok)
			}
			b := int(key[1])
			kids, err := decodeNode(value)
			l, r := kids[0], kids[1]
			if err != nil || l.kind == kindEmpty || r.kind == kindEmpty {
				t.Fatalf("node record %x does not name two sides: %v", key, err)
			}
			if got := NodeHash(l.hashAt(b+1), r.hashAt(b+1)); got != want {
				t.Fatalf("node record %x hashes to %x, reference %x", key, got, want)
			}
			nodes++
		case rootTag:
		default:
			t.Fatalf("record %x of no kind", key)
		}
	}
	if nodes != len(branches) {
		t.Fatalf("%d nodes stored, the map needs %d", nodes, len(branches))
	}
}

// checkProof proves k (with value hash v, nil when absent) and tampers with
// the proof every way that must be refused.
func checkProof(t testing.TB, s *MemStore, root Hash, m map[Hash]Hash, k Hash, v *Hash) {
	t.Helper()
	p, err := Prove(s, k)
	if err != nil {
		t.Fatal(err)
	}
	if want := refProve(m, k); !reflect.DeepEqual(p, want) {
		t.Fatalf("proof of %s:\n%+v\nreference:\n%+v", k, proofText(p), proofText(want))
	}
	if err := VerifyHash(root, k, v, p); err != nil {
		t.Fatalf("proof of %s (value %v): %v", k, v, err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseProof(b)
	if err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("proof %s read back as %v (%v)", b, proofText(back), err)
	}
	for name, bad := range tamperings(k, v, p) {
		if err := VerifyHash(root, bad.k, bad.v, bad.p); err == nil {
			t.Fatalf("proof of %s verified %s", k, name)
		} else if !errors.Is(err, ErrProofMismatch) && !errors.Is(err, ErrProofFormat) {
			t.Fatalf("proof of %s %s: %v", k, name, err)
		}
	}
}

type claim struct {
	k Hash
	v *Hash
	p Proof
}

// tamperings are claims derived from the honest claim (k, v, p) that must
// not verify under the same root.
func tamperings(k Hash, v *Hash, p Proof) map[string]claim {
	out := make(map[string]claim)
	clone := func() Proof {
		q := p
		q.Siblings = append([]Hash{}, p.Siblings...)
		return q
	}
	flip := func(h Hash, i int) Hash {
		h[i/8] ^= 0x80 >> (i % 8)
		return h
	}
	d := len(p.Siblings)
	if v != nil {
		changed := flip(*v, 7)
		out["with a changed value"] = claim{k, &changed, p}
		out["as an absence"] = claim{k, nil, p}
		out["for another key"] = claim{flip(k, 255), v, p}
		if d > 0 {
			out["for a key off its path"] = claim{flip(k, d-1), v, p}
		}
	} else {
		some := HashValue([]byte("x"))
		out["as a membership"] = claim{k, &some, p}
		if d > 0 {
			out["for a key off its path"] = claim{flip(k, 0), nil, p}
		}
		if p.KeyHash != nil {
			q := clone()
			kk := k
			q.KeyHash = &kk
			out["with the key as the other entry"] = claim{k, nil, q}
			q = clone()
			ov := flip(*p.ValueHash, 3)
			q.ValueHash = &ov
			out["with the other entry's value changed"] = claim{k, nil, q}
			q = clone()
			q.ValueHash = nil
			out["with key_hash alone"] = claim{k, nil, q}
		} else {
			q := clone()
			other := flip(k, 200)
			if d > 0 {
				other = flip(k, d-1)
			}
			vv := some
			q.KeyHash, q.ValueHash = &other, &vv
			out["with an invented other entry"] = claim{k, nil, q}
		}
	}
	// A changed sibling at the top, at the bottom and at each non-empty
	// place between (up to a few): enough to reach every level's fold
	// without a proof of depth 256 costing 256 folds of 256 levels.
	changed := 0
	for i := range p.Siblings {
		if i != 0 && i != d-1 && (p.Siblings[i] == Empty || changed >= 4) {
			continue
		}
		changed++
		q := clone()
		q.Siblings[i] = flip(q.Siblings[i], 100)
		out[fmt.Sprintf("with sibling %d changed", i)] = claim{k, v, q}
	}
	if d > 0 {
		q := clone()
		q.Siblings = q.Siblings[:d-1]
		out["with the last sibling removed"] = claim{k, v, q}
		q = clone()
		q.Siblings = q.Siblings[1:]
		out["with the first sibling removed"] = claim{k, v, q}
	}
	q := clone()
	q.Siblings = append(q.Siblings, Empty)
	out["with an empty sibling added below"] = claim{k, v, q}
	q = clone()
	q.Siblings = append(q.Siblings, HashValue(nil))
	out["with a sibling added below"] = claim{k, v, q}
	q = clone()
	q.Siblings = append([]Hash{HashValue(nil)}, q.Siblings...)
	out["with a sibling added above"] = claim{k, v, q}
	return out
}

func proofText(p Proof) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// batchWriter keeps an Update's writes apart from the store it reads, as a
// Pebble batch does until it is committed, and checks them as they come:
// each key written once, and no delete of a record the store lacks (a
// tombstone for nothing costs a real store space).
type batchWriter struct {
	t       testing.TB
	base    *MemStore
	written map[string]bool
	writes  []func() error
}

func newBatch(t testing.TB, base *MemStore) *batchWriter {
	return &batchWriter{t: t, base: base, written: make(map[string]bool)}
}

func (b *batchWriter) once(key []byte) {
	b.t.Helper()
	if b.written[string(key)] {
		b.t.Fatalf("record %x written twice in one update", key)
	}
	b.written[string(key)] = true
}

func (b *batchWriter) Set(key, value []byte) error {
	b.once(key)
	key, value = append([]byte{}, key...), append([]byte{}, value...)
	b.writes = append(b.writes, func() error { return b.base.Set(key, value) })
	return nil
}

func (b *batchWriter) Delete(key []byte) error {
	b.once(key)
	if _, ok, _ := b.base.Get(key); !ok {
		b.t.Fatalf("delete of %x, which the store lacks", key)
	}
	key = append([]byte{}, key...)
	b.writes = append(b.writes, func() error { return b.base.Delete(key) })
	return nil
}

// commit applies the writes to the store.
func (b *batchWriter) commit() {
	b.t.Helper()
	for _, w := range b.writes {
		if err := w(); err != nil {
			b.t.Fatal(err)
		}
	}
	b.writes = nil
	clear(b.written)
}
