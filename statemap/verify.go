package statemap

import "fmt"

// Verify checks that proof p shows, under root, key's record to be value,
// or key to have no record when value is nil. A non-nil empty value is a
// record of zero bytes.
func Verify(root Hash, key string, value []byte, p Proof) error {
	if value == nil {
		return VerifyHash(root, HashKey(key), nil, p)
	}
	v := HashValue(value)
	return VerifyHash(root, HashKey(key), &v, p)
}

// VerifyHash is Verify over the key hash k and the value hash, nil for
// absence: what a mirror that keeps only hashes checks.
//
// It starts from the hash at depth d = len(p.Siblings), the entry's leaf,
// an empty subtree, or the other entry's leaf, and folds upwards: at depth
// i from d-1 to 0, h = SHA-256(0x01 ‖ sibling ‖ h) if bit i of k is 1, else
// SHA-256(0x01 ‖ h ‖ sibling). Besides the fold it refuses, as
// ErrProofFormat, the shapes an honest tree never yields, though the fold
// alone would refuse them too (doc.go): a last sibling that is empty (the
// subtree above holds the same entries, so the proof should have stopped
// there), an absence-other entry off k's path or equal to k, and a
// membership proof that carries another entry.
func VerifyHash(root, k Hash, valueHash *Hash, p Proof) error {
	d := len(p.Siblings)
	if d > Depth {
		return fmt.Errorf("%w: %d siblings", ErrProofFormat, d)
	}
	if (p.KeyHash == nil) != (p.ValueHash == nil) {
		return fmt.Errorf("%w: key_hash and value_hash go together", ErrProofFormat)
	}
	if d > 0 && p.Siblings[d-1] == (Hash{}) {
		return fmt.Errorf("%w: the sibling at depth %d is empty", ErrProofFormat, d-1)
	}
	var h Hash
	switch {
	case valueHash != nil && p.KeyHash != nil:
		return fmt.Errorf("%w: a membership proof names another entry", ErrProofFormat)
	case valueHash != nil:
		h = LeafHash(k, *valueHash)
	case p.KeyHash != nil:
		if *p.KeyHash == k {
			return fmt.Errorf("%w: the other entry is the key itself", ErrProofFormat)
		}
		if commonPrefix(*p.KeyHash, k) < d {
			return fmt.Errorf("%w: the other entry is not on the key's path to depth %d", ErrProofFormat, d)
		}
		h = LeafHash(*p.KeyHash, *p.ValueHash)
	default:
		h = Hash{}
	}
	for i := d - 1; i >= 0; i-- {
		if k.Bit(i) == 1 {
			h = NodeHash(p.Siblings[i], h)
		} else {
			h = NodeHash(h, p.Siblings[i])
		}
	}
	if h != root {
		return ErrProofMismatch
	}
	return nil
}
