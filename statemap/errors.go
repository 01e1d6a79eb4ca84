package statemap

import "errors"

// ErrHashEncoding is a hash whose text is not exactly 32 bytes in standard
// base64 with padding.
var ErrHashEncoding = errors.New("hash is not 32 bytes of standard base64")

// ErrProofFormat is a proof whose shape no honest tree yields: more than
// Depth siblings, a key_hash without its value_hash, an absence-other entry
// that does not share the path's first d bits or is the key itself, a last
// sibling that is empty, or JSON that is not exactly the proof's fields.
var ErrProofFormat = errors.New("malformed state proof")

// ErrProofMismatch is a well-formed proof that does not fold to the root it
// is checked against: the value, the key, a sibling or the root differs.
var ErrProofMismatch = errors.New("state proof does not lead to the root")

// ErrDuplicateChange is a batch of changes that names one key twice: which
// one wins would be a matter of order the caller did not state.
var ErrDuplicateChange = errors.New("a batch changes one key twice")

// ErrCorrupt is a store whose records contradict each other: an entry that
// is not 32 bytes, a subtree with two entries and no node hash, a missing
// or short root record.
var ErrCorrupt = errors.New("state map store is corrupt")
