package commands_test

import (
	"context"
	"strings"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
)

// otherNodeDID is a real node DID that is not the test node's.
const otherNodeDID = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"

// handedOff bootstraps an identity with an agent token, and hands it to another
// node with that token's own binding: an identity handed off to another node.
func handedOff(t *testing.T, c *idNode, tokens *commands.Tokens, slug string) (did string, agent commands.Actor) {
	t.Helper()
	ctx := context.Background()
	res := c.bootstrap("Wanderer", slug)
	issued, err := tokens.Create(ctx, owner, commands.TokenKindAgent, slug)
	if err != nil {
		t.Fatal(err)
	}
	agent, ok := tokens.Authenticate(issued.Secret)
	if !ok {
		t.Fatal("a fresh agent token does not authenticate")
	}
	if _, err := c.cmd.UpdateControllerBinding(ctx, agent, commands.ControllerBindingInput{AgentDID: res.AgentDID,
		ControllerKind: "remote_orchestrator", ControllerRef: "far-away", NodeID: ptr(otherNodeDID)}); err != nil {
		t.Fatalf("hand-off by the identity's own token: %v", err)
	}
	return res.AgentDID, agent
}

// TestHandOffIsFinal: once an identity's active binding names another node, no
// token of this node acts for it: not the owner, and not an agent token issued
// before the hand-off, which must not be able to bind it back.
func TestHandOffIsFinal(t *testing.T) {
	c := openCore(t, nil)
	n := &idNode{t: t, log: c.Log, read: c.Identities, cmd: c.Identity}
	ctx := context.Background()
	did, agent := handedOff(t, n, c.Tokens, "wanderer")

	back := commands.ControllerBindingInput{AgentDID: did, ControllerKind: "local_model", ControllerRef: "home"}
	for _, a := range []struct {
		name  string
		actor commands.Actor
	}{{"owner", owner}, {"agent token issued before the hand-off", agent}} {
		t.Run(a.name, func(t *testing.T) {
			tip := n.log.Tip().Seq
			_, err := n.cmd.UpdateControllerBinding(ctx, a.actor, back)
			n.refused(t, err, tip, commands.KindForbidden, "forbidden", "")
			if !strings.Contains(err.Error(), otherNodeDID) {
				t.Errorf("refusal %q does not name the node the identity was handed to", err)
			}
			_, err = n.cmd.UpdateProfile(ctx, a.actor, commands.ProfileInput{AgentDID: did, Faction: ptr("order")})
			n.refused(t, err, tip, commands.KindForbidden, "forbidden", "")
			_, err = n.cmd.UpdatePublicIdentity(ctx, a.actor, commands.PublicIdentityInput{AgentDID: did, DisplayName: "Back"})
			n.refused(t, err, tip, commands.KindForbidden, "forbidden", "")
		})
	}
	id, _ := found(n.read.IdentityByDID(did))
	if b := id.Binding; b == nil || !b.Active || b.NodeID == nil || *b.NodeID != otherNodeDID {
		t.Fatalf("binding after the refusals = %+v, want the hand-off", b)
	}
}

// TestTokenCreateRefusesIdentityBoundElsewhere: issuing an agent token for an
// identity this node no longer controls is 403, online and offline, and stores
// and audits nothing.
func TestTokenCreateRefusesIdentityBoundElsewhere(t *testing.T) {
	c := openCore(t, nil)
	n := &idNode{t: t, log: c.Log, read: c.Identities, cmd: c.Identity}
	ctx := context.Background()
	handedOff(t, n, c.Tokens, "wanderer")
	before, err := c.Tokens.List(owner)
	if err != nil {
		t.Fatal(err)
	}
	audited := func() int {
		es, err := c.Log.AuditEntries(eventlog.AuditQuery{Action: "token.*", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	entries := audited()
	for _, a := range []struct {
		name  string
		actor commands.Actor
	}{{"owner token", owner}, {"offline CLI", commands.Actor{Kind: commands.ActorOwner}}} {
		t.Run(a.name, func(t *testing.T) {
			_, err := c.Tokens.Create(ctx, a.actor, commands.TokenKindAgent, "wanderer")
			n.refused(t, err, n.log.Tip().Seq, commands.KindForbidden, "forbidden", "acts_for")
			if !strings.Contains(err.Error(), otherNodeDID) {
				t.Errorf("refusal %q does not name the node the identity was handed to", err)
			}
		})
	}
	after, err := c.Tokens.List(owner)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("tokens: %d before the refused creates, %d after", len(before), len(after))
	}
	if got := audited(); got != entries {
		t.Errorf("token audit entries: %d before the refused creates, %d after", entries, got)
	}
	// An identity bound back to this node, or never handed off, still gets tokens.
	n.bootstrap("Homebody", "homebody")
	if _, err := c.Tokens.Create(ctx, owner, commands.TokenKindAgent, "homebody"); err != nil {
		t.Fatalf("token for an identity of this node: %v", err)
	}
}
