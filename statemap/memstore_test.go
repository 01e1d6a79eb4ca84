package statemap

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// FuzzMemStore holds MemStore to a sorted list under sets, deletes and
// range reads of one-byte and two-byte keys, enough of them to split runs.
func FuzzMemStore(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 0, 3, 3, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := new(MemStore)
		var ref [][2]string
		find := func(key string) (int, bool) {
			return slices.BinarySearchFunc(ref, key, func(kv [2]string, k string) int { return bytes.Compare([]byte(kv[0]), []byte(k)) })
		}
		for len(data) >= 3 {
			op, a, b := data[0], data[1], data[2]
			data = data[3:]
			key := []byte{a}
			if op&4 != 0 {
				key = append(key, b)
			}
			switch op % 4 {
			case 0, 1:
				// Many keys at once, so that runs fill and split.
				n := 1 + int(op%2)*int(b)*3
				for j := range n {
					k := append(slices.Clone(key), byte(j), byte(j>>8))
					if n == 1 {
						k = key
					}
					if err := s.Set(k, []byte{b}); err != nil {
						t.Fatal(err)
					}
					if i, ok := find(string(k)); ok {
						ref[i][1] = string([]byte{b})
					} else {
						ref = slices.Insert(ref, i, [2]string{string(k), string([]byte{b})})
					}
				}
			case 2:
				if err := s.Delete(key); err != nil {
					t.Fatal(err)
				}
				if i, ok := find(string(key)); ok {
					ref = slices.Delete(ref, i, i+1)
				}
			case 3:
				lo, hi := key, []byte{b}
				i, _ := find(string(lo))
				j, _ := find(string(hi))
				k, v, ok, err := s.First(lo, hi)
				if err != nil || ok != (i < j) || ok && (string(k) != ref[i][0] || string(v) != ref[i][1]) {
					t.Fatalf("First(%x, %x) = %x, %x, %v, %v", lo, hi, k, v, ok, err)
				}
				k, v, ok, err = s.Last(lo, hi)
				if err != nil || ok != (i < j) || ok && (string(k) != ref[j-1][0] || string(v) != ref[j-1][1]) {
					t.Fatalf("Last(%x, %x) = %x, %x, %v, %v", lo, hi, k, v, ok, err)
				}
			}
			v, ok, err := s.Get(key)
			i, found := find(string(key))
			if err != nil || ok != found || ok && string(v) != ref[i][1] {
				t.Fatalf("Get(%x) = %x, %v, %v", key, v, ok, err)
			}
		}
		if s.Len() != len(ref) {
			t.Fatalf("%d records, reference %d", s.Len(), len(ref))
		}
		i := 0
		for k, v := range s.All() {
			if string(k) != ref[i][0] || string(v) != ref[i][1] {
				t.Fatalf("record %d is %x=%x, reference %x=%x", i, k, v, ref[i][0], ref[i][1])
			}
			i++
		}
	})
}

// TestCorruptStore: a store that lost a node record is reported as
// ErrCorrupt by the proofs and updates that need it, never answered with a
// proof that fails or a wrong root.
func TestCorruptStore(t *testing.T) {
	s := new(MemStore)
	var cs []Change
	for i := range 64 {
		cs = append(cs, Put(string(rune('a'+i)), []byte{byte(i)}))
	}
	root := mustUpdate(t, s, cs...)
	var node []byte
	for k := range s.All() {
		if k[0] == nodeTag && k[1] == 2 {
			node = k
			break
		}
	}
	if node == nil {
		t.Fatal("no node record at depth 2")
	}
	if err := s.Delete(node); err != nil {
		t.Fatal(err)
	}
	corrupt := 0
	for _, c := range cs {
		p, err := Prove(s, c.KeyHash)
		switch {
		case errors.Is(err, ErrCorrupt):
			corrupt++
			if _, _, err := Update(s, new(MemStore), []Change{{KeyHash: c.KeyHash, ValueHash: Hash{1}}}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Update of a key whose proof needs the lost node: %v", err)
			}
		case err != nil:
			t.Fatal(err)
		default:
			if err := VerifyHash(root, c.KeyHash, &c.ValueHash, p); err != nil {
				t.Fatalf("a proof from the damaged store: %v", err)
			}
		}
	}
	if corrupt == 0 {
		t.Fatal("no proof needed the lost node")
	}
}
