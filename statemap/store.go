package statemap

import (
	"encoding/binary"
	"fmt"
)

// Reader is the ordered key-value store a tree is read from: a Pebble
// snapshot or database under a key prefix of the caller's, or a MemStore.
// Keys compare as bytes. A slice it returns need stay valid only until its
// next call, and its caller does not modify it. The reads of one Update or Prove must all see one state: a
// Pebble snapshot when commits run beside them. First and Last are a
// SeekGE and a SeekLT within bounds, so a Pebble adapter may keep one
// iterator for a whole call.
type Reader interface {
	// Get returns the value stored under key, if any.
	Get(key []byte) (value []byte, ok bool, err error)
	// First returns the smallest key in [lo, hi) and its value, if any.
	First(lo, hi []byte) (key, value []byte, ok bool, err error)
	// Last returns the largest key in [lo, hi) and its value, if any.
	Last(lo, hi []byte) (key, value []byte, ok bool, err error)
}

// Writer takes the writes of one Update: a Pebble batch the caller commits,
// or a MemStore. Update never reads back what it wrote in the same call, so
// the batch need not be indexed.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// The key layout (doc.go). Each kind of record has its own first byte so
// that entries form one contiguous range ordered by key hash.
const (
	entryTag = 'e'
	nodeTag  = 'n'
	rootTag  = 'r'
)

// rootKey holds the root and the entry count of the whole map.
var rootKey = []byte{rootTag}

// entryKey is where the entry of key hash k keeps its value hash.
func entryKey(k Hash) []byte {
	b := make([]byte, 1+len(k))
	b[0] = entryTag
	copy(b[1:], k[:])
	return b
}

// entryRange is [lo, hi) over the entry keys of the subtree at depth d on
// path's side.
func entryRange(path Hash, d int) (lo, hi []byte) {
	first := prefix(path, d)
	last := first
	if d < Depth {
		last[d/8] |= 0xff >> uint(d%8)
		for i := d/8 + 1; i < len(last); i++ {
			last[i] = 0xff
		}
	}
	lo = entryKey(first)
	hi = append(entryKey(last), 0)
	return lo, hi
}

// nodeKey is where the hash of the branching node at depth d on path's side
// is kept: the depth, then the d bits of its prefix in ⌈d/8⌉ bytes.
func nodeKey(path Hash, d int) []byte {
	p := prefix(path, d)
	n := (d + 7) / 8
	b := make([]byte, 2+n)
	b[0] = nodeTag
	b[1] = byte(d)
	copy(b[2:], p[:n])
	return b
}

// entry is one key hash and its value hash.
type entry struct {
	key, value Hash
}

// readEntry decodes a key and value of the entry range.
func readEntry(key, value []byte) (entry, error) {
	var e entry
	if len(key) != 1+len(e.key) || key[0] != entryTag || len(value) != len(e.value) {
		return e, fmt.Errorf("%w: entry %x", ErrCorrupt, key)
	}
	copy(e.key[:], key[1:])
	copy(e.value[:], value)
	return e, nil
}

// span is what a subtree holds, as far as hashing needs: nothing, one
// entry, or two or more (many) between first and last.
type span struct {
	n           int // 0, 1, or 2 for two or more
	first, last entry
}

// readSpan reads the first and last entries of the subtree at depth d on
// path's side.
func readSpan(r Reader, path Hash, d int) (span, error) {
	var s span
	lo, hi := entryRange(path, d)
	k, v, ok, err := r.First(lo, hi)
	if err != nil || !ok {
		return s, err
	}
	if s.first, err = readEntry(k, v); err != nil {
		return s, err
	}
	k, v, ok, err = r.Last(lo, hi)
	if err != nil {
		return s, err
	}
	if !ok {
		return s, fmt.Errorf("%w: range %x has a first entry and no last", ErrCorrupt, lo)
	}
	if s.last, err = readEntry(k, v); err != nil {
		return s, err
	}
	s.n = 1
	if s.last.key != s.first.key {
		s.n = 2
	}
	return s, nil
}

// split returns the spans of the two sides of a subtree at depth d that
// holds two or more entries, s. Its first entry is the first of the left
// side, its last the last of the right, so a side costs one read, and none
// when every entry is on one side.
func (s span) split(r Reader, d int) ([2]span, error) {
	var sides [2]span
	if commonPrefix(s.first.key, s.last.key) > d {
		sides[s.first.key.Bit(d)] = s
		return sides, nil
	}
	left := span{first: s.first}
	lo, hi := entryRange(withBit(s.first.key, d, 0), d+1)
	k, v, ok, err := r.Last(lo, hi)
	if err != nil {
		return sides, err
	}
	if !ok {
		return sides, fmt.Errorf("%w: range %x has no last entry", ErrCorrupt, lo)
	}
	if left.last, err = readEntry(k, v); err != nil {
		return sides, err
	}
	right := span{last: s.last}
	lo, hi = entryRange(withBit(s.first.key, d, 1), d+1)
	k, v, ok, err = r.First(lo, hi)
	if err != nil {
		return sides, err
	}
	if !ok {
		return sides, fmt.Errorf("%w: range %x has no first entry", ErrCorrupt, lo)
	}
	if right.first, err = readEntry(k, v); err != nil {
		return sides, err
	}
	for _, side := range []*span{&left, &right} {
		side.n = 1
		if side.first.key != side.last.key {
			side.n = 2
		}
	}
	sides[0], sides[1] = left, right
	return sides, nil
}

// hash is the subtree's hash. Two or more entries branch first at the bit
// where the first and the last differ; only that node's hash is stored, and
// the levels above it, whose other side is empty, are folded here.
func (s span) hash(r Reader, d int) (Hash, error) {
	switch s.n {
	case 0:
		return Hash{}, nil
	case 1:
		return LeafHash(s.first.key, s.first.value), nil
	}
	b := commonPrefix(s.first.key, s.last.key)
	h, err := readNode(r, s.first.key, b)
	if err != nil {
		return Hash{}, err
	}
	return foldEmpty(h, s.first.key, d, b), nil
}

// readNode reads the stored hash of the branching node at depth d on path's
// side.
func readNode(r Reader, path Hash, d int) (Hash, error) {
	var h Hash
	key := nodeKey(path, d)
	v, ok, err := r.Get(key)
	if err != nil {
		return h, err
	}
	if !ok || len(v) != len(h) {
		return h, fmt.Errorf("%w: node %x", ErrCorrupt, key)
	}
	copy(h[:], v)
	return h, nil
}

// Root returns the map's root and entry count as the last Update left them:
// Empty and 0 for a store that never held an entry.
func Root(r Reader) (root Hash, entries uint64, err error) {
	v, ok, err := r.Get(rootKey)
	if err != nil || !ok {
		return Hash{}, 0, err
	}
	if len(v) != len(root)+8 {
		return Hash{}, 0, fmt.Errorf("%w: root record of %d bytes", ErrCorrupt, len(v))
	}
	copy(root[:], v)
	return root, binary.BigEndian.Uint64(v[len(root):]), nil
}

// Lookup returns the value hash stored for key hash k.
func Lookup(r Reader, k Hash) (valueHash Hash, ok bool, err error) {
	v, ok, err := r.Get(entryKey(k))
	if err != nil || !ok {
		return valueHash, false, err
	}
	e, err := readEntry(entryKey(k), v)
	return e.value, err == nil, err
}
