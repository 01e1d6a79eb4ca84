package commands

import "github.com/civnode/civnode/eventlog/events"

// Who may act for whom (docs/tokens.md). These rules are the whole authorisation model:
// identity commands apply them, and so do later commands (missions) that act for
// an identity or govern a subnet.
//
//   - An identity whose active controller binding names a different node
//     (node_id set and not this node's DID) has been handed to that node: no
//     token of this node acts for it any more, neither the owner nor an agent
//     token issued before the hand-off. Otherwise the owner, who can issue and
//     rotate agent tokens at will, could take back through a token what the
//     hand-off took from it.
//   - The owner acts for the node DID and for every other identity of this node.
//   - An agent token acts for its one identity only.
//   - An observer acts for nobody and reads only the event log, the stream and
//     health.
//   - The owner is the governance actor of the subnets in Actor.Governs.

// ActsFor reports whether a may act for the identity id on the node whose DID is
// nodeDID.
func (a Actor) ActsFor(nodeDID string, id events.IdentityRef) bool {
	if _, elsewhere := BoundElsewhere(nodeDID, id); elsewhere {
		return false
	}
	switch a.Kind {
	case ActorOwner:
		return true
	case ActorAgent:
		return a.AgentDID != "" && a.AgentDID == id.AgentDID
	}
	return false
}

// BoundElsewhere returns the node that id's active controller binding names
// when that is not the node whose DID is nodeDID: the identity has been handed
// to that node and is controlled from there.
func BoundElsewhere(nodeDID string, id events.IdentityRef) (node string, elsewhere bool) {
	b := id.Binding
	if b == nil || !b.Active || b.NodeID == nil || *b.NodeID == "" || *b.NodeID == nodeDID {
		return "", false
	}
	return *b.NodeID, true
}

// ActsForNode reports whether a may act for the node's own DID.
func (a Actor) ActsForNode() bool { return a.Kind == ActorOwner }

// GovernsSubnet reports whether a is the governance actor of subnetID.
func (a Actor) GovernsSubnet(subnetID string) bool {
	if a.Kind != ActorOwner {
		return false
	}
	for _, s := range a.Governs {
		if s == subnetID {
			return true
		}
	}
	return false
}

// RequireOwner refuses every actor but the owner.
func RequireOwner(a Actor) error {
	if a.Kind != ActorOwner {
		return Forbidden("forbidden", "only the node owner's token may do this")
	}
	return nil
}

// RequireAgentOrOwner refuses observers: identity commands and the civilization
// reads are for the owner and agent tokens.
func RequireAgentOrOwner(a Actor) error {
	if a.Kind != ActorOwner && a.Kind != ActorAgent {
		return Forbidden("forbidden", "this token may not use the civilization endpoints")
	}
	return nil
}

// RequireActsFor refuses an actor that may not act for id. An actor that would
// act for id but for a hand-off is told which node the identity went to.
func RequireActsFor(a Actor, nodeDID string, id events.IdentityRef) error {
	if a.ActsFor(nodeDID, id) {
		return nil
	}
	if node, elsewhere := BoundElsewhere(nodeDID, id); elsewhere &&
		(a.Kind == ActorOwner || a.Kind == ActorAgent && a.AgentDID == id.AgentDID) {
		return handedOff(id.PublicID, node)
	}
	return Forbidden("forbidden", "this token may not act for %s", id.PublicID)
}

// handedOff is the 403 of an identity controlled from another node.
func handedOff(publicID, node string) *Error {
	return Forbidden("forbidden", "%s is controlled from node %s (its active controller binding names that node), "+
		"so no token of this node acts for it", publicID, node)
}
