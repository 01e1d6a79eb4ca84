package stream

import (
	"strings"
)

// EventSubject is the subject an event of eventType is published on.
func EventSubject(nodeDID, eventType string) string {
	return "civnode." + nodeDID + ".events." + eventType
}

// ExportsSubject is the subject export notices are published on.
func ExportsSubject(nodeDID string) string {
	return "civnode." + nodeDID + ".exports"
}

// CheckpointsSubject is the subject the tree's signed checkpoints are
// published on (docs/transparency.md).
func CheckpointsSubject(nodeDID string) string {
	return "civnode." + nodeDID + ".checkpoints"
}

// WitnessedSubject is the subject the witnessed checkpoints are published on:
// the node's note with a quorum of witnesses' cosignatures
// (docs/transparency.md, Witnessing).
func WitnessedSubject(nodeDID string) string {
	return CheckpointsSubject(nodeDID) + ".witnessed"
}

// filterSubject turns an eventlog type filter into the NATS subject that
// matches the same types: "" every type, "mission.*" every type that starts
// with "mission." at any depth (the eventlog prefix rule, which is NATS's '>'
// because types are dot-separated tokens), anything else one exact type. The
// filter must satisfy eventlog.ValidTypeFilter, which keeps '>' and stray '*'
// out of the subject.
func filterSubject(nodeDID, filter string) string {
	if filter == "" {
		return EventSubject(nodeDID, ">")
	}
	if prefix, ok := strings.CutSuffix(filter, ".*"); ok {
		return EventSubject(nodeDID, prefix+".>")
	}
	return EventSubject(nodeDID, filter)
}
