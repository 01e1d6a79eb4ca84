package statemap

import (
	"crypto/sha256"
	"errors"
	"testing"
)

// fuzzKey makes a key hash from two bytes of fuzz input. Besides hashed
// keys it makes keys that share long prefixes (a few bits set in zeros, or
// cleared in ones), which SHA-256 of real keys never would, so that deep
// branching, long empty runs and depth-255 splits are all reached.
func fuzzKey(kind, a, b byte) Hash {
	var k Hash
	switch kind % 3 {
	case 0:
		return sha256.Sum256([]byte{'k', a % 64})
	case 1:
		k = withBit(k, int(a), 1)
		return withBit(k, int(b), 1)
	default:
		for i := range k {
			k[i] = 0xff
		}
		k = withBit(k, int(a), 0)
		return withBit(k, int(b), 0)
	}
}

// maxFuzzOps bounds a FuzzTree input: the reference is quadratic, and a
// few dozen keys already reach every shape of a subtree.
const maxFuzzOps = 48

// FuzzTree applies batches of inserts, updates and deletes, read from the
// input four bytes at a time, and after each batch holds the store to the
// reference: root, count and records, and the proof of every key the batch
// changed, with its tamperings refused; after the last batch, the proof of
// every key present or ever named.
func FuzzTree(f *testing.F) {
	f.Add([]byte{0, 1, 0, 7, 0, 2, 0, 8, 3, 0, 0, 0, 4, 1, 0, 0})
	f.Add([]byte{1, 255, 255, 1, 1, 254, 254, 2, 2, 0, 0, 3, 3, 0, 0, 0, 5, 255, 255, 0})
	f.Add([]byte{1, 0, 200, 1, 1, 0, 201, 2, 1, 0, 0, 3, 3, 0, 0, 0, 5, 0, 0, 0, 1, 1, 9, 4})
	f.Fuzz(func(t *testing.T, data []byte) { runFuzzTree(t, data) })
}

// runFuzzTree is FuzzTree's body.
func runFuzzTree(t testing.TB, data []byte) {
	t.Helper()
	s := new(MemStore)
	m := make(map[Hash]Hash)
	var seen []Hash
	batch := make(map[Hash]Change)
	flush := func(last bool) {
		cs := make([]Change, 0, len(batch))
		changed := make([]Hash, 0, len(batch))
		for k, c := range batch {
			cs = append(cs, c)
			changed = append(changed, k)
		}
		bw := newBatch(t, s)
		root, n, err := Update(s, bw, cs)
		if err != nil {
			t.Fatal(err)
		}
		bw.commit()
		for _, c := range cs {
			if c.Delete {
				delete(m, c.KeyHash)
			} else {
				m[c.KeyHash] = c.ValueHash
			}
		}
		if root != refRoot(m) || n != uint64(len(m)) {
			t.Fatalf("Update returned %s and %d, reference %s and %d", root, n, refRoot(m), len(m))
		}
		if last {
			changed = keysOf(m, seen...)
		}
		checkMap(t, s, m, changed)
		clear(batch)
	}
	if len(data) > 4*maxFuzzOps {
		data = data[:4*maxFuzzOps]
	}
	for len(data) >= 4 {
		op, a, b, v := data[0], data[1], data[2], data[3]
		data = data[4:]
		if op%8 == 7 {
			flush(false)
			continue
		}
		k := fuzzKey(op%8/2, a, b)
		seen = append(seen, k)
		batch[k] = Change{KeyHash: k, ValueHash: sha256.Sum256([]byte{v}), Delete: op&1 == 1}
	}
	flush(true)
	// A batch naming one key twice is refused and changes nothing.
	if len(seen) > 0 {
		before := s.Bytes()
		_, _, err := Update(s, s, []Change{{KeyHash: seen[0]}, {KeyHash: seen[0], Delete: true}})
		if !errors.Is(err, ErrDuplicateChange) || s.Bytes() != before {
			t.Fatalf("a duplicate change: %v, %d bytes stored before and %d after", err, before, s.Bytes())
		}
	}
}

// FuzzParseProof: whatever ParseProof accepts writes back, through
// encoding/json and the Proof's tags, to a proof it reads the same.
func FuzzParseProof(f *testing.F) {
	f.Add([]byte(`{"siblings":[]}`))
	f.Add([]byte(`{"siblings":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="],"key_hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","value_hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`))
	f.Add([]byte(`{"siblings":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProof(data)
		if err != nil {
			if !errors.Is(err, ErrProofFormat) {
				t.Fatalf("%q: %v is not ErrProofFormat", data, err)
			}
			return
		}
		if p.Siblings == nil || len(p.Siblings) > Depth || (p.KeyHash == nil) != (p.ValueHash == nil) {
			t.Fatalf("%q read as %+v", data, p)
		}
		again, err := ParseProof([]byte(proofText(p)))
		if err != nil || proofText(again) != proofText(p) {
			t.Fatalf("%q: written as %s, read back as %s (%v)", data, proofText(p), proofText(again), err)
		}
	})
}
