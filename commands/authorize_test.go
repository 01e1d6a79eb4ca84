package commands_test

import (
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
)

func TestActsFor(t *testing.T) {
	const nodeDID, agentDID, otherDID = "did:key:znode", "did:key:zagent", "did:key:zother"
	bound := func(nodeID *string, active bool) *events.ControllerBindingUpdated {
		return &events.ControllerBindingUpdated{AgentDID: agentDID, ControllerKind: "local_model",
			ControllerRef: "ref", NodeID: nodeID, OwnershipScope: "exclusive", Active: active}
	}
	for _, tc := range []struct {
		name  string
		actor commands.Actor
		id    events.IdentityRef
		want  bool
	}{
		{"owner, no binding", owner, events.IdentityRef{AgentDID: agentDID}, true},
		{"owner, bound here without node_id", owner, events.IdentityRef{AgentDID: agentDID, Binding: bound(nil, true)}, true},
		{"owner, bound to this node", owner, events.IdentityRef{AgentDID: agentDID, Binding: bound(ptr(nodeDID), true)}, true},
		{"owner, bound to another node", owner, events.IdentityRef{AgentDID: agentDID, Binding: bound(ptr("did:key:zelsewhere"), true)}, false},
		{"owner, inactive binding to another node", owner, events.IdentityRef{AgentDID: agentDID, Binding: bound(ptr("did:key:zelsewhere"), false)}, true},
		{"agent, itself", agentActor(agentDID), events.IdentityRef{AgentDID: agentDID}, true},
		// A hand-off is final: the identity's own token no longer acts for it
		// here, so it cannot bind it back.
		{"agent, itself bound elsewhere", agentActor(agentDID), events.IdentityRef{AgentDID: agentDID, Binding: bound(ptr("did:key:zelsewhere"), true)}, false},
		{"agent, itself bound to this node", agentActor(agentDID), events.IdentityRef{AgentDID: agentDID, Binding: bound(ptr(nodeDID), true)}, true},
		{"agent, itself with an inactive binding elsewhere", agentActor(agentDID), events.IdentityRef{AgentDID: agentDID, Binding: bound(ptr("did:key:zelsewhere"), false)}, true},
		{"agent, another", agentActor(agentDID), events.IdentityRef{AgentDID: otherDID}, false},
		{"agent without DID", agentActor(""), events.IdentityRef{AgentDID: ""}, false},
		{"observer", observer, events.IdentityRef{AgentDID: agentDID}, false},
		{"zero actor", commands.Actor{}, events.IdentityRef{AgentDID: agentDID}, false},
	} {
		if got := tc.actor.ActsFor(nodeDID, tc.id); got != tc.want {
			t.Errorf("%s: ActsFor = %v, want %v", tc.name, got, tc.want)
		}
		err := commands.RequireActsFor(tc.actor, nodeDID, tc.id)
		if (err == nil) != tc.want {
			t.Errorf("%s: RequireActsFor = %v", tc.name, err)
		}
	}
}

func TestActorKinds(t *testing.T) {
	agent := agentActor("did:key:zagent")
	if !owner.ActsForNode() || agent.ActsForNode() || observer.ActsForNode() {
		t.Error("only the owner acts for the node")
	}
	if !owner.GovernsSubnet("genesis") || owner.GovernsSubnet("other") || agent.GovernsSubnet("genesis") {
		t.Error("only the owner governs, and only its --governs subnets")
	}
	if commands.RequireOwner(owner) != nil || commands.RequireOwner(agent) == nil || commands.RequireOwner(observer) == nil {
		t.Error("RequireOwner")
	}
	if commands.RequireAgentOrOwner(owner) != nil || commands.RequireAgentOrOwner(agent) != nil ||
		commands.RequireAgentOrOwner(observer) == nil || commands.RequireAgentOrOwner(commands.Actor{}) == nil {
		t.Error("RequireAgentOrOwner")
	}
}
