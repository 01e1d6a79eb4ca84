package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// ControllerBindingInput replaces an agent's controller binding
// (POST /v1/civilization/controller-binding).
type ControllerBindingInput struct {
	AgentDID       string  `json:"agent_did"`       // required
	ControllerKind string  `json:"controller_kind"` // required, e.g. local_model, remote_orchestrator, human_operator
	ControllerRef  string  `json:"controller_ref"`  // required: which controller instance
	NodeID         *string `json:"node_id"`         // the cluster node the controller runs on; null is this node
	OwnershipScope *string `json:"ownership_scope"` // exclusive (default) or shared
	Active         *bool   `json:"active"`          // default true
}

// UpdateControllerBinding appends controller_binding.updated with the full new
// binding. An active binding may not share its controller_ref with another
// agent's active binding unless both are shared: 409 controller_ref_taken.
func (c *Identity) UpdateControllerBinding(ctx context.Context, a Actor, in ControllerBindingInput) (eventlog.Event, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return eventlog.Event{}, err
	}
	b, err := in.binding()
	if err != nil {
		return eventlog.Event{}, err
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		if _, err := c.lookup(a, b.AgentDID); err != nil {
			return nil, err
		}
		if b.Active {
			others, err := c.controllers.ActiveBindingsByRef(b.ControllerRef)
			if err != nil {
				return nil, err
			}
			for _, other := range others {
				if other.AgentDID != b.AgentDID &&
					(other.OwnershipScope == events.ScopeExclusive || b.OwnershipScope == events.ScopeExclusive) {
					return nil, Conflict("controller_ref_taken", "controller_ref",
						"controller_ref is already bound to another agent")
				}
			}
		}
		return []eventlog.Draft{{Type: events.TypeControllerBindingUpdated, Payload: b}}, nil
	})
	return firstEvent(evs), err
}

// binding validates in and fills in the defaults.
func (in ControllerBindingInput) binding() (events.ControllerBindingUpdated, error) {
	b := events.ControllerBindingUpdated{AgentDID: in.AgentDID, ControllerKind: in.ControllerKind,
		ControllerRef: in.ControllerRef, NodeID: in.NodeID, OwnershipScope: events.ScopeExclusive, Active: true}
	if err := checkAgentDID(in.AgentDID); err != nil {
		return b, err
	}
	switch {
	case in.ControllerKind == "":
		return b, Missing("controller_kind")
	case !controllerKindPattern.MatchString(in.ControllerKind):
		return b, Invalid("controller_kind", "controller_kind must be 1 to 40 characters of a-z, 0-9 and _")
	case in.ControllerRef == "":
		return b, Missing("controller_ref")
	}
	if err := checkText("controller_ref", in.ControllerRef, maxControllerRef); err != nil {
		return b, err
	}
	if err := checkOptionalText("node_id", in.NodeID, maxLabel); err != nil {
		return b, err
	}
	// node_id names the node the controller runs on, and a binding on another node
	// takes the identity out of this owner's hands (authorize.go). Only a real node
	// DID may do that, so a typo cannot lock the owner out.
	if in.NodeID != nil {
		if _, err := eventlog.PublicKeyFromDID(*in.NodeID); err != nil {
			return b, Invalid("node_id", "node_id must be a node's did:key, or null for this node")
		}
	}
	if in.OwnershipScope != nil {
		if err := checkChoice("ownership_scope", in.OwnershipScope,
			[]string{events.ScopeExclusive, events.ScopeShared}); err != nil {
			return b, err
		}
		b.OwnershipScope = *in.OwnershipScope
	}
	if in.Active != nil {
		b.Active = *in.Active
	}
	return b, nil
}
