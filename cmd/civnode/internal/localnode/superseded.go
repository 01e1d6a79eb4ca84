package localnode

import (
	"encoding/json"

	"github.com/civnode/civnode/eventlog"
)

// NodePromoted is the type of the event a promoted standby appends first
// (civnode promote): its payload names the new instance and the tree size it
// took over at.
const NodePromoted = "node.promoted"

// promotedPayload is node.promoted's payload.
type promotedPayload struct {
	Instance string `json:"instance"`
	TreeSize int64  `json:"tree_size"`
}

// SupersededBy reports whether ev is a node.promoted naming another instance
// than instance, and which: a node that meets one in its chain's catch-up was
// replaced, and must never write beside the node promoted in its place.
func SupersededBy(ev eventlog.Event, instance string) (other string, ok bool) {
	if ev.Type != NodePromoted {
		return "", false
	}
	var p promotedPayload
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Instance == instance {
		return "", false
	}
	return p.Instance, true
}
