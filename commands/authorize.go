package commands

import "github.com/civnode/civnode/eventlog/events"

// Who may act for whom (wire.md §2). These rules are the whole authorisation model:
// identity commands apply them, and so do later commands (missions) that act for
// an identity or govern a subnet.
//
//   - The owner acts for the node DID and for every identity of this node, except
//     one whose active controller binding names a different node (node_id set and
//     not this node's DID): that identity is controlled elsewhere.
//   - An agent token acts for its one identity only.
//   - An observer acts for nobody and reads only the event log, the stream and
//     health.
//   - The owner is the governance actor of the subnets in Actor.Governs.

// ActsFor reports whether a may act for the identity id on the node whose DID is
// nodeDID.
func (a Actor) ActsFor(nodeDID string, id events.IdentityRef) bool {
	switch a.Kind {
	case ActorOwner:
		b := id.Binding
		elsewhere := b != nil && b.Active && b.NodeID != nil && *b.NodeID != "" && *b.NodeID != nodeDID
		return !elsewhere
	case ActorAgent:
		return a.AgentDID != "" && a.AgentDID == id.AgentDID
	}
	return false
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

// RequireActsFor refuses an actor that may not act for id.
func RequireActsFor(a Actor, nodeDID string, id events.IdentityRef) error {
	if !a.ActsFor(nodeDID, id) {
		return Forbidden("forbidden", "this token may not act for %s", id.PublicID)
	}
	return nil
}
