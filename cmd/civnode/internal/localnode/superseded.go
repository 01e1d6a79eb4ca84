package localnode

import (
	"encoding/json"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// SupersededBy reports whether ev is a node.promoted naming another instance
// than instance, and which: a node that meets one in its chain's catch-up was
// replaced, and must never write beside the node promoted in its place.
func SupersededBy(ev eventlog.Event, instance string) (other string, ok bool) {
	if ev.Type != events.TypeNodePromoted {
		return "", false
	}
	var p events.NodePromoted
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Instance == instance {
		return "", false
	}
	return p.Instance, true
}
