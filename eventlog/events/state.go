package events

// TypeStateCommitted: the node's commitment to its state map, a sparse
// Merkle tree over the records its read routes answer by id (docs/
// state-proofs.md). The node appends it itself, off the write path, when the
// map changed since its last commitment; anyone holding the chain folds the
// events through ThroughSeq, recomputes the root and finds a wrong one.
const TypeStateCommitted = "state.committed"

// StateCommitted is the payload of state.committed.
type StateCommitted struct {
	// ThroughSeq is the last event whose effect the state includes.
	ThroughSeq uint64 `json:"through_seq"`
	// StateRoot is the tree's root: 32 bytes, standard base64.
	StateRoot string `json:"state_root"`
	// Entries is the number of entries in the map.
	Entries uint64 `json:"entries"`
}
