package statemap

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// Depth is the depth of the tree: one level per bit of a key hash.
const Depth = 256

// Hash is a SHA-256 output: a key hash, a value hash or a subtree hash. Its
// text form, and so its JSON form, is standard base64 with padding.
type Hash [32]byte

// Empty is the hash of an empty subtree, and so the root of an empty map:
// the zero Hash. The package itself compares with Hash{}, so that no caller
// can change what it verifies by assigning to this variable.
var Empty Hash

// HashKey is k, the key hash of a record's key "<kind>/<id>": the path of
// its entry from the root.
func HashKey(key string) Hash {
	return sha256.Sum256([]byte(key))
}

// HashValue is the value hash of a record's bytes.
func HashValue(value []byte) Hash {
	return sha256.Sum256(value)
}

// LeafHash is the hash of a subtree that holds exactly one entry,
// SHA-256(0x00 ‖ k ‖ value hash), whatever the subtree's depth: a lone
// entry needs no path above it, so a sparse tree costs what its entries do.
func LeafHash(keyHash, valueHash Hash) Hash {
	var b [1 + 32 + 32]byte
	b[0] = 0x00
	copy(b[1:], keyHash[:])
	copy(b[33:], valueHash[:])
	return sha256.Sum256(b[:])
}

// NodeHash is the hash of a subtree that holds two or more entries,
// SHA-256(0x01 ‖ left ‖ right). The prefix byte keeps it apart from a leaf.
func NodeHash(left, right Hash) Hash {
	var b [1 + 32 + 32]byte
	b[0] = 0x01
	copy(b[1:], left[:])
	copy(b[33:], right[:])
	return sha256.Sum256(b[:])
}

// Bit is bit i of h, for i in [0, Depth), most significant first: bit 0
// chooses the root's child, and 0 is left.
func (h Hash) Bit(i int) int {
	return int(h[i/8]>>(7-uint(i%8))) & 1
}

// String is the base64 form, as in JSON.
func (h Hash) String() string {
	return base64.StdEncoding.EncodeToString(h[:])
}

// MarshalText writes standard base64 with padding.
func (h Hash) MarshalText() ([]byte, error) {
	return []byte(h.String()), nil
}

// UnmarshalText reads exactly 32 bytes in standard base64 with padding and
// no other spelling of them (Strict: no stray bits, no line breaks), so one
// hash has one text form and a proof file cannot carry a second meaning.
func (h *Hash) UnmarshalText(text []byte) error {
	b, err := base64.StdEncoding.Strict().DecodeString(string(text))
	if err != nil || len(b) != len(h) || base64.StdEncoding.EncodeToString(b) != string(text) {
		return fmt.Errorf("%w: %q", ErrHashEncoding, text)
	}
	copy(h[:], b)
	return nil
}

// commonPrefix is how many leading bits a and b share (Depth when equal).
func commonPrefix(a, b Hash) int {
	for i := range a {
		if x := a[i] ^ b[i]; x != 0 {
			n := i * 8
			for x&0x80 == 0 {
				x <<= 1
				n++
			}
			return n
		}
	}
	return Depth
}

// prefix is h with every bit from d on cleared: the name of the subtree at
// depth d on h's path.
func prefix(h Hash, d int) Hash {
	var p Hash
	copy(p[:d/8], h[:d/8])
	if d%8 != 0 {
		p[d/8] = h[d/8] & (0xff << (8 - uint(d%8)))
	}
	return p
}

// withBit is h with bit i set to v.
func withBit(h Hash, i, v int) Hash {
	mask := byte(0x80) >> uint(i%8)
	if v == 1 {
		h[i/8] |= mask
	} else {
		h[i/8] &^= mask
	}
	return h
}

// foldEmpty lifts the hash h of a subtree at depth to on path's side up to
// depth from (from ≤ to), where every sibling on the way is empty: the
// levels between a branching node and the shallower subtree that holds
// nothing else.
func foldEmpty(h Hash, path Hash, from, to int) Hash {
	for i := to - 1; i >= from; i-- {
		if path.Bit(i) == 1 {
			h = NodeHash(Hash{}, h)
		} else {
			h = NodeHash(h, Hash{})
		}
	}
	return h
}
