package events

// TypeNodePromoted: a standby (a mirror's data dir, civnode promote) took over
// the chain with the origin's key. It is the first event the new instance
// signs, so anyone reading the chain knows from which seq on another
// process holds the key, and a node that catches up past it knows it was
// replaced and must never append beside the new one.
const TypeNodePromoted = "node.promoted"

// NodePromoted is the payload of node.promoted.
type NodePromoted struct {
	// Instance is the promoted data dir's instance id: 32 lowercase hex
	// digits, random, kept in the data dir's instance file.
	Instance string `json:"instance"`
	// TreeSize is the number of events the chain held when the new instance
	// took over: the event itself is at seq TreeSize+1, unless a write the
	// fork guard let in at the same moment landed first.
	TreeSize int64 `json:"tree_size"`
}
