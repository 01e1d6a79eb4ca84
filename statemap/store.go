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

// entry is one key hash, its value hash and its locator.
type entry struct {
	key, value Hash
	loc        uint64
}

// The kinds of subtree a ref names.
const (
	kindEmpty = 0
	kindLeaf  = 1
	kindNode  = 2
)

// refSize is the bytes of an encoded ref: kind, depth, key, hash, locator.
const refSize = 1 + 1 + 32 + 32 + 8

// nodeSize is the bytes of a node record: its two children's refs.
const nodeSize = 2 * refSize

// rootSize is the bytes of the root record: root, entry count, the whole
// map's ref.
const rootSize = 32 + 8 + refSize

// ref names a subtree by what hashing and walking it need, without reading
// it: nothing; one entry (key and value hashes); or two or more, by the
// depth where they first branch, the key hash of one entry below (whose
// first depth bits name the node record), and the hash of the subtree at
// that depth. Every level between a subtree's own depth and its branching
// depth has an empty sibling, so the subtree's hash at any depth follows
// (hashAt). A leaf's ref also carries the entry's locator (Change.Loc),
// which is stored and never hashed.
type ref struct {
	kind  byte
	depth int
	key   Hash
	hash  Hash // the value hash of a leaf, the branching node's hash of a node
	loc   uint64
}

func (r ref) encode(b []byte) {
	b[0] = r.kind
	b[1] = byte(r.depth)
	copy(b[2:34], r.key[:])
	copy(b[34:66], r.hash[:])
	binary.BigEndian.PutUint64(b[66:74], r.loc)
}

func decodeRef(b []byte) (ref, error) {
	r := ref{kind: b[0], depth: int(b[1])}
	copy(r.key[:], b[2:34])
	copy(r.hash[:], b[34:66])
	r.loc = binary.BigEndian.Uint64(b[66:74])
	if r.kind > kindNode {
		return ref{}, fmt.Errorf("%w: reference of kind %d", ErrCorrupt, r.kind)
	}
	return r, nil
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
	if !ok || len(v) != nodeSize {
		return kids, fmt.Errorf("%w: node %x", ErrCorrupt, key)
	}
	if kids[0], err = decodeRef(v[:refSize]); err != nil {
		return kids, err
	}
	if kids[1], err = decodeRef(v[refSize:]); err != nil {
		return kids, err
	}
	if kids[0].kind == kindEmpty || kids[1].kind == kindEmpty {
		return kids, fmt.Errorf("%w: node %x does not branch", ErrCorrupt, key)
	}
	return kids, nil
}

// writeNode writes the children of the branching node at depth d on path's
// side.
func writeNode(w Writer, path Hash, d int, kids [2]ref) error {
	v := make([]byte, nodeSize)
	kids[0].encode(v[:refSize])
	kids[1].encode(v[refSize:])
	return w.Set(nodeKey(path, d), v)
}

// readRoot reads the root record: Empty, 0 and an empty ref for a store
// that never held an entry.
func readRoot(r Reader) (root Hash, entries uint64, top ref, err error) {
	v, ok, err := r.Get(rootKey)
	if err != nil || !ok {
		return Hash{}, 0, ref{}, err
	}
	if len(v) != rootSize {
		return Hash{}, 0, ref{}, fmt.Errorf("%w: root record of %d bytes", ErrCorrupt, len(v))
	}
	copy(root[:], v)
	entries = binary.BigEndian.Uint64(v[32:40])
	top, err = decodeRef(v[40:])
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
