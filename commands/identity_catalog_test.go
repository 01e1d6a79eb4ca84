package commands_test

import (
	"context"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
)

// customCatalog has none of the built-in factions, roles or strategies.
const customCatalog = `{
  "version": "test.1",
  "stages": [{"id": "start", "title": "Start", "description": "The only stage."}],
  "roles": [{"id": "pilot", "title": "Pilot", "description": "Flies.", "focus_domains": ["transport"]}],
  "factions": [{"id": "guild", "title": "Guild", "description": "The guild."}],
  "strategies": [{"id": "bold", "title": "Bold", "description": "Bold."}],
  "domains": [{"id": "transport", "title": "Transport", "description": "Moving things."}],
  "mission_templates": [{"id": "first-flight", "title": "First flight", "description": "Fly once.",
    "domain": "transport", "required_role": "pilot", "required_faction": null,
    "reward": {"agent_credit": 1, "reputation": 1, "capacity": 0, "treasury_share_credit": 0},
    "sets": ["starter", "pack:basics"]}],
  "mission_packs": [{"id": "basics", "title": "Basics", "description": "The basics.", "default": true}],
  "starter_missions": ["first-flight"]
}`

// TestIdentityVocabularyFromCatalog: profile values are checked against the
// catalog the commands were given.
func TestIdentityVocabularyFromCatalog(t *testing.T) {
	ctx := context.Background()

	cat, err := catalog.Parse([]byte(customCatalog))
	if err != nil {
		t.Fatal(err)
	}
	n := newIDNode(t)
	custom, err := commands.NewIdentity(commands.IdentityOptions{Log: n.log, NodeKey: n.key,
		Identities: n.read.Decisions(), Controllers: n.read.Decisions(), Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}

	res, err := custom.Bootstrap(ctx, owner, commands.BootstrapInput{DisplayName: "Ace",
		Role: ptr("pilot"), Faction: ptr("guild"), Strategy: ptr("bold")})
	if err != nil {
		t.Fatalf("bootstrap with the custom catalog's values: %v", err)
	}
	for _, tc := range []struct {
		field string
		in    commands.ProfileInput
	}{
		{"role", commands.ProfileInput{AgentDID: res.AgentDID, Role: ptr("broker")}},
		{"faction", commands.ProfileInput{AgentDID: res.AgentDID, Faction: ptr("order")}},
		{"strategy", commands.ProfileInput{AgentDID: res.AgentDID, Strategy: ptr("balanced")}},
	} {
		tip := n.log.Tip().Seq
		_, err := custom.UpdateProfile(ctx, owner, tc.in)
		n.refused(t, err, tip, commands.KindInvalid, "invalid_field", tc.field)
		tip = n.log.Tip().Seq
		_, err = custom.Bootstrap(ctx, owner, commands.BootstrapInput{DisplayName: "Other",
			Role: tc.in.Role, Faction: tc.in.Faction, Strategy: tc.in.Strategy})
		n.refused(t, err, tip, commands.KindInvalid, "invalid_field", tc.field)
	}
	if _, err := custom.UpdateProfile(ctx, owner, commands.ProfileInput{AgentDID: res.AgentDID, Role: ptr("pilot")}); err != nil {
		t.Errorf("update to the custom role: %v", err)
	}

	// Commands built without a catalog keep the built-in values.
	if _, err := n.cmd.UpdateProfile(ctx, owner, commands.ProfileInput{AgentDID: res.AgentDID, Role: ptr("broker")}); err != nil {
		t.Errorf("default commands refuse a built-in role: %v", err)
	}
	tip := n.log.Tip().Seq
	_, err = n.cmd.UpdateProfile(ctx, owner, commands.ProfileInput{AgentDID: res.AgentDID, Role: ptr("pilot")})
	n.refused(t, err, tip, commands.KindInvalid, "invalid_field", "role")
}
