package commands_test

import (
	"context"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// missionNode is a node wired as cmd wires it (core.Open): identities and
// missions, queried durably (ids, missions) and at their newest state (idsD,
// mD, what the commands read), with the identity and mission commands.
type missionNode struct {
	t        *testing.T
	log      *eventlog.Log
	ids      *projections.Identities // durable
	idsD     *projections.Identities // decisions
	missions *projections.Missions   // durable
	mD       *projections.Missions   // decisions
	identity *commands.Identity
	mission  *commands.Mission
}

func newMissionNode(t *testing.T) *missionNode {
	t.Helper()
	c := openCore(t, nil)
	return &missionNode{t: t, log: c.Log, ids: c.Identities, idsD: c.Identities.Decisions(),
		missions: c.Missions, mD: c.Missions.Decisions(), identity: c.Identity, mission: c.Mission}
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
)
