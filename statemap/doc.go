// Package statemap is the state map of a node: a sparse Merkle tree that
// commits, in one 32-byte root, to every record a read route answers by id,
// so that one answer (GET /v1/state/proof) can be checked against a root the
// chain signs, without replaying the chain. It imports only the standard
// library, so the offline verifier and a mirror carry nothing else.
//
// # The tree
//
// The map's keys are the UTF-8 strings "<kind>/<id>", its values the bytes
// of the records. The tree has depth 256 over k = SHA-256(key), whose bits,
// most significant first, are the path from the root: bit 0 chooses the
// root's child, and 0 is left.
//
//   - an empty subtree hashes to 32 zero bytes (Empty);
//   - a subtree holding exactly one entry hashes to
//     SHA-256(0x00 ‖ k ‖ SHA-256(value)), whatever its depth (LeafHash);
//   - a subtree holding two or more hashes to SHA-256(0x01 ‖ left ‖ right)
//     (NodeHash).
//
// The root is the hash of the whole tree: Empty for an empty map.
//
// # Proofs
//
// A Proof for key K lists the siblings beside K's path, root-side first, down
// to depth d = len(siblings), and says what sits there: K's entry
// (membership), nothing (absence), or one other entry whose key_hash shares
// K's first d bits (absence). VerifyHash folds upwards from that hash: at
// depth i from d-1 to 0, h = SHA-256(0x01 ‖ sibling ‖ h) if bit i of k is 1,
// else SHA-256(0x01 ‖ h ‖ sibling), and compares h with the root. In JSON the
// siblings, key_hash and value_hash are standard base64 with padding.
//
// Prove stops at the first depth where K's subtree holds at most one entry.
// That is the only proof of K that can fold to the root: because a lone
// entry hashes the same at every depth, the subtree one level above a
// single entry (or an empty subtree) whose sibling is empty hashes to that
// entry's leaf (or to Empty) again, not to SHA-256(0x01 ‖ …), so a proof that
// went deeper would need a hash collision to verify. A verifier therefore
// accepts no proof but the minimal one. VerifyHash also refuses outright the
// part of that which it can see without the tree, a last sibling that is
// Empty, along with an absence-other entry equal to K or off K's first d
// bits and more than 256 siblings (ErrProofFormat); what it cannot see, say
// an absence-empty proof whose last sibling is a lone entry's leaf, fails the
// fold (ErrProofMismatch).
//
// # Storage
//
// A tree lives in an ordered key-value store (Reader, Writer): the node's
// Pebble under a prefix of its own, or a MemStore. Three kinds of record:
//
//	'e' ‖ k (32 bytes)                  → SHA-256(value) (32 bytes)   one per entry
//	'n' ‖ depth (1 byte) ‖ prefix       → node hash (32 bytes)        one per branching node
//	'r'                                 → root (32) ‖ entry count (8, big-endian)
//
// The prefix of a node is the first depth bits of the paths below it, in
// ⌈depth/8⌉ bytes with the bits past depth cleared.
//
// Entries are ordered by key hash, so the entries of any subtree form one
// key range: its first and last entries (Reader.First, Reader.Last) say
// whether it holds none, one or more, and where two or more first branch
// (the bit where the first and the last differ). Only branching nodes, those
// with entries on both sides, keep a hash: a map of n entries has exactly
// n-1 of them, against about 1.44n subtrees of two or more entries for
// random keys, and a chain of one-sided levels above a branching node is
// folded from it with empty siblings when read. A subtree of one entry
// needs no record beyond the entry, since its hash is the entry's leaf.
// At a million entries the records hold about 102 bytes of keys and values
// per entry (an entry's 65, a node's about 37), before the store's own
// overhead and compression.
//
// Update takes a batch of changes, sorted by key hash, and walks down only
// the subtrees they touch, knowing each subtree's first and last entries:
// where a subtree branches, the left side's first entry and the right
// side's last are its own, so one read each finds the left side's last and
// the right side's first, and a side without changes costs one more read,
// its stored node hash. It writes the node record of each subtree that
// branches (deleting it where a subtree stopped). Below a subtree that held
// at most one entry nothing is stored, so it is built afresh from the
// changes. A batch of c changes thus reads and writes O(c × depth) records,
// and depth is about log2 n for keys that are SHA-256 outputs; the changes
// of one batch share the reads and writes of the levels above them. Update
// never reads a record it wrote in the same call, so a plain Pebble batch
// takes its writes. Prove walks one path the same way.
package statemap
