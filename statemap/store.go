package statemap

import (
	"encoding/binary"
	"fmt"
)

// Reader is the key-value store a tree is read from: a Pebble snapshot or
// database under a key prefix of the caller's, a MemStore, or a Cache in
// front of either. The tree needs only point reads: every record it reads is
// named by a key it already knows, so a store answers each from its bloom
// filters and caches without a range seek. A slice Get returns need stay
// valid only until its next call, and its caller does not modify it. The
// reads of one Update or Prove must all see one state: a Pebble snapshot
// when commits run beside them.
type Reader interface {
	// Get returns the value stored under key, if any.
	Get(key []byte) (value []byte, ok bool, err error)
}

// Writer takes the writes of one Update: a Pebble batch the caller commits,
// or a MemStore. Update never reads back what it wrote in the same call, so
// the batch need not be indexed.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// The key layout (doc.go). Each kind of record has its own first byte.
const (
	nodeTag = 'n'
	rootTag = 'r'
)

// rootKey holds the root, the entry count and the reference of the whole
// map.
var rootKey = []byte{rootTag}

// nodeKey is where the children of the branching node at depth d on path's
// side are kept: the depth, then the d bits of its prefix in ⌈d/8⌉ bytes.
func nodeKey(path Hash, d int) []byte {
	p := prefix(path, d)
	n := (d + 7) / 8
	b := make([]byte, 2+n)
	b[0] = nodeTag
	b[1] = byte(d)
	copy(b[2:], p[:n])
	return b
}

// Entry is one entry of the map as its tree stores it: the key and value
// hashes, and the locator the caller gave it (Change.Loc).
type Entry struct {
	KeyHash, ValueHash Hash
	Loc                uint64
}

// The kinds of subtree a ref names.
const (
	kindEmpty = 0
	kindLeaf  = 1
	kindNode  = 2
)

// ref names a subtree by what hashing and walking it need, without reading
// it: nothing; one entry (key and value hashes); or two or more, by the
// depth where they first branch, the first depth bits of their key hashes
// (which name the node record; the bits past depth are zero), and the hash
// of the subtree at that depth. Every level between a subtree's own depth
// and its branching depth has an empty sibling, so the subtree's hash at
// any depth follows (hashAt). A leaf's ref also carries the entry's locator
// (Change.Loc), which is stored and never hashed.
type ref struct {
	kind  byte
	depth int
	key   Hash
	hash  Hash // the value hash of a leaf, the branching node's hash of a node
	loc   uint64
}

// An encoded ref is its kind, then for a leaf the key hash, value hash and
// locator (73 bytes), and for a node the depth, the ⌈depth/8⌉ bytes of the
// key's prefix and the hash (34 to 66 bytes); an empty ref is its kind.
const (
	leafRefSize = 1 + 32 + 32 + 8
	minRefSize  = 1
)

// appendRef appends r's encoding to b.
func appendRef(b []byte, r ref) []byte {
	b = append(b, r.kind)
	switch r.kind {
	case kindLeaf:
		b = append(append(b, r.key[:]...), r.hash[:]...)
		return binary.BigEndian.AppendUint64(b, r.loc)
	case kindNode:
		b = append(b, byte(r.depth))
		b = append(b, r.key[:(r.depth+7)/8]...)
		return append(b, r.hash[:]...)
	}
	return b
}

// decodeRef decodes the ref at the start of b and returns the bytes after
// it.
func decodeRef(b []byte) (ref, []byte, error) {
	short := func() (ref, []byte, error) {
		return ref{}, nil, fmt.Errorf("%w: reference of %d bytes", ErrCorrupt, len(b))
	}
	if len(b) < minRefSize {
		return short()
	}
	r := ref{kind: b[0]}
	switch r.kind {
	case kindEmpty:
		return r, b[1:], nil
	case kindLeaf:
		if len(b) < leafRefSize {
			return short()
		}
		copy(r.key[:], b[1:33])
		copy(r.hash[:], b[33:65])
		r.loc = binary.BigEndian.Uint64(b[65:73])
		return r, b[leafRefSize:], nil
	case kindNode:
		if len(b) < 2 {
			return short()
		}
		r.depth = int(b[1])
		n := (r.depth + 7) / 8
		if len(b) < 2+n+32 {
			return short()
		}
		copy(r.key[:n], b[2:2+n])
		if r.key != prefix(r.key, r.depth) {
			return ref{}, nil, fmt.Errorf("%w: node reference with bits past its depth", ErrCorrupt)
		}
		copy(r.hash[:], b[2+n:2+n+32])
		return r, b[2+n+32:], nil
	}
	return ref{}, nil, fmt.Errorf("%w: reference of kind %d", ErrCorrupt, r.kind)
}

// decodeNode decodes a node record: its two sides' refs, nothing after.
func decodeNode(v []byte) ([2]ref, error) {
	var kids [2]ref
	l, rest, err := decodeRef(v)
	if err != nil {
		return kids, err
	}
	r, rest, err := decodeRef(rest)
	if err != nil {
		return kids, err
	}
	if len(rest) != 0 {
		return kids, fmt.Errorf("%w: %d bytes after a node record's refs", ErrCorrupt, len(rest))
	}
	return [2]ref{l, r}, nil
}

// hashAt is the hash of the subtree r names, standing at depth d on its
// path (d ≤ its branching depth).
func (r ref) hashAt(d int) Hash {
	switch r.kind {
	case kindLeaf:
		return LeafHash(r.key, r.hash)
	case kindNode:
		return foldEmpty(r.hash, r.key, d, r.depth)
	}
	return Hash{}
}

// readNode reads the two children of the branching node that r names.
func readNode(rd Reader, r ref) ([2]ref, error) {
	var kids [2]ref
	key := nodeKey(r.key, r.depth)
	v, ok, err := rd.Get(key)
	if err != nil {
		return kids, err
	}
	if !ok {
		return kids, fmt.Errorf("%w: node %x", ErrCorrupt, key)
	}
	if kids, err = decodeNode(v); err != nil {
		return kids, fmt.Errorf("node %x: %w", key, err)
	}
	if kids[0].kind == kindEmpty || kids[1].kind == kindEmpty {
		return kids, fmt.Errorf("%w: node %x does not branch", ErrCorrupt, key)
	}
	return kids, nil
}

// writeNode writes the children of the branching node at depth d on path's
// side.
func writeNode(w Writer, path Hash, d int, kids [2]ref) error {
	v := make([]byte, 0, 2*leafRefSize)
	return w.Set(nodeKey(path, d), appendRef(appendRef(v, kids[0]), kids[1]))
}

// readRoot reads the root record: Empty, 0 and an empty ref for a store
// that never held an entry.
func readRoot(r Reader) (root Hash, entries uint64, top ref, err error) {
	v, ok, err := r.Get(rootKey)
	if err != nil || !ok {
		return Hash{}, 0, ref{}, err
	}
	if len(v) < 32+8 {
		return Hash{}, 0, ref{}, fmt.Errorf("%w: root record of %d bytes", ErrCorrupt, len(v))
	}
	copy(root[:], v)
	entries = binary.BigEndian.Uint64(v[32:40])
	top, rest, err := decodeRef(v[40:])
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes after the root record's ref", ErrCorrupt, len(rest))
	}
	return root, entries, top, err
}

// Root returns the map's root and entry count as the last Update left them:
// Empty and 0 for a store that never held an entry.
func Root(r Reader) (root Hash, entries uint64, err error) {
	root, entries, _, err = readRoot(r)
	return root, entries, err
}

// Lookup returns the value hash and locator stored for key hash k, walking
// its path as Prove does.
func Lookup(r Reader, k Hash) (valueHash Hash, loc uint64, ok bool, err error) {
	_, e, ok, err := ProveEntry(r, k)
	return e.ValueHash, e.Loc, ok, err
}
