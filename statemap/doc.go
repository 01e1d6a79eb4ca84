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
// A tree lives in a key-value store (Reader, Writer): the node's Pebble
// under a prefix of its own, or a MemStore. It is stored as a compressed
// (Patricia) tree, and read by point reads only (Reader.Get), never a
// range: each record is named by a key the walk already knows. Two kinds
// of record:
//
//	'n' ‖ depth (1 byte) ‖ prefix       → left ref ‖ right ref      one per branching node
//	'r'                                 → root (32) ‖ entry count (8, big-endian) ‖ ref
//
// The prefix of a node is the first depth bits of the paths below it, in
// ⌈depth/8⌉ bytes with the bits past depth cleared. A branching node is a
// subtree with entries on both sides: a map of n entries has exactly n-1.
//
// A ref names a subtree without reading it, and begins with its kind:
//
//	0 (empty)                                          nothing more
//	1 (one entry)  key hash (32) ‖ value hash (32) ‖ locator (8, big-endian)
//	2 (two or more) depth (1) ‖ prefix (⌈depth/8⌉) ‖ hash (32)
//
// A node's ref gives the depth where its entries first branch, their
// common prefix to that depth, which names that node's record, and the
// hash of the subtree at that depth. A node's record holds the refs of its
// two sides, and the root record the ref of the whole map. Every level
// between a subtree's own depth and the depth where it branches has an
// empty sibling, so its hash at its own depth folds from the ref with no
// read. An entry is stored only in the ref of its leaf: a lookup walks its
// path as a proof does. The locator is the caller's (Change.Loc), 8 bytes
// it stores beside an entry to find the value the tree holds only the hash
// of; it is never hashed. The records are a pure function of the map's
// entries and their locators.
//
// Update takes a batch of changes, sorted by key hash, and walks down from
// the root's ref along their paths, one read per branching node they pass,
// shared by the changes below it: where the changes leave a node's path
// above its branching depth, a new node branches there with the old
// subtree whole on one side; where a walk ends at one entry or none, the
// entry there tells whether a change changes anything, and the subtree is
// built afresh from it and the changes. It writes the record of each node
// it changed (deleting it where a node stopped branching) and the root
// record, and nothing for changes that change nothing; Apply also returns
// the locators the batch released. A batch of c changes thus reads and
// writes O(c × depth) records, and depth is about log2 n for keys that are
// SHA-256 outputs.
// Update never reads a record it wrote in the same call, so a plain Pebble
// batch takes its writes. Prove reads the root record and one node record
// per branching node on the key's path, and so does Lookup.
//
// At a million entries the records hold about 115 bytes of keys and values
// per entry, one node's.
//
// A Cache keeps the root and node records of one tree in memory within a
// bound of bytes, in front of any Reader: every walk reads the upper levels,
// which a store answers from disk when its own caches hold the rest of the
// node's data. When full it drops the deepest records first, so a tree
// larger than its bound keeps whole levels from the root down. An Update
// through a CacheWriter notes its writes, and once the caller has committed
// them, Committed moves the cache to the new tree.
package statemap
