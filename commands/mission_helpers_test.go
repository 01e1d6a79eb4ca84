package commands_test

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// missionNode is a node wired as cmd wires it: identities and missions, each with
// a read model fed by OnCommit and a decision model fed by OnSequenced, and the
// identity and mission commands over the decision models.
type missionNode struct {
	t        *testing.T
	log      *eventlog.Log
	ids      *projections.Identities // read
	idsD     *projections.Identities // decision
	missions *projections.Missions   // read
	mD       *projections.Missions   // decision
	identity *commands.Identity
	mission  *commands.Mission
}

func newMissionNode(t *testing.T) *missionNode {
	t.Helper()
	n := &missionNode{t: t, ids: projections.NewIdentities(), idsD: projections.NewIdentities(),
		missions: projections.NewMissions(), mD: projections.NewMissionDecisions()}
	key := ed25519.NewKeyFromSeed(nodeSeed)
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: slog.New(slog.DiscardHandler),
		OnCommit: func(evs []eventlog.Event) {
			n.ids.ApplyEvents(evs)
			n.missions.ApplyEvents(evs)
		},
		OnSequenced: func(evs []eventlog.Event) {
			n.idsD.ApplyEvents(evs)
			n.mD.ApplyEvents(evs)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	n.log = l
	if err := projections.Rebuild(context.Background(), l, n.ids, n.idsD, n.missions, n.mD); err != nil {
		t.Fatal(err)
	}
	if n.identity, err = commands.NewIdentity(commands.IdentityOptions{Log: l, NodeKey: key,
		Identities: n.idsD, Controllers: n.idsD}); err != nil {
		t.Fatal(err)
	}
	if n.mission, err = commands.NewMission(commands.MissionOptions{Log: l, Missions: n.mD,
		Identities: n.idsD, Profiles: n.idsD}); err != nil {
		t.Fatal(err)
	}
	return n
}

// agent bootstraps an identity with a profile and, if bound, an active binding.
func (n *missionNode) agent(slug, faction, role string, bound bool) string {
	n.t.Helper()
	res, err := n.identity.Bootstrap(context.Background(), owner, commands.BootstrapInput{
		DisplayName: "Agent " + slug, PublicID: &slug, Faction: &faction, Role: &role})
	if err != nil {
		n.t.Fatal(err)
	}
	if bound {
		if _, err := n.identity.UpdateControllerBinding(context.Background(), owner, commands.ControllerBindingInput{
			AgentDID: res.AgentDID, ControllerKind: "local_model", ControllerRef: "ctl-" + slug}); err != nil {
			n.t.Fatal(err)
		}
	}
	return res.AgentDID
}

func createInput(publisher, kind string) commands.CreateMissionInput {
	v := func(n int64) *int64 { return &n }
	return commands.CreateMissionInput{Title: "Survey", Description: "Survey the outer belt.", Publisher: publisher,
		PublisherKind: kind, Domain: "research", SubnetID: "genesis",
		Reward: &commands.RewardInput{AgentCredit: v(10), Reputation: v(2), Capacity: v(1), TreasuryShareCredit: v(4)}}
}

var (
	_ commands.MissionReader = (*projections.Missions)(nil)
	_ commands.ProfileReader = (*projections.Identities)(nil)
	_ projections.Model      = (*projections.Missions)(nil)
)
