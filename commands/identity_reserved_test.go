package commands_test

import (
	"context"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// TestReservedSlugsAtBootstrap: no identity may take as its slug the id of a
// subnet this node governs, a faction of the catalog, or a name that carries
// authority; an agent that took "genesis" could publish beside the government
// of genesis under its name.
func TestReservedSlugsAtBootstrap(t *testing.T) {
	n := newIDNodeGoverning(t, "genesis", "mars")
	agentWithoutGovernance := commands.Actor{TokenID: "owner", Kind: commands.ActorOwner} // --governs is the node's, not the token's
	for _, tc := range []struct {
		name, slug string
		actor      commands.Actor
		kind       commands.Kind
		code       string
	}{
		{"the default governed subnet", "genesis", owner, commands.KindConflict, "slug_reserved"},
		{"a subnet of --governs", "mars", agentWithoutGovernance, commands.KindConflict, "slug_reserved"},
		{"a faction of the catalog", "order", owner, commands.KindConflict, "slug_reserved"},
		{"the node", "node", owner, commands.KindConflict, "slug_reserved"},
		{"the owner", "owner", owner, commands.KindConflict, "slug_reserved"},
		{"an admin", "admin", owner, commands.KindConflict, "slug_reserved"},
		{"the treasury", "treasury", owner, commands.KindConflict, "slug_reserved"},
		{"the government", "government", owner, commands.KindConflict, "slug_reserved"},
		{"the publisher kind of governments", "planetary-government", owner, commands.KindConflict, "slug_reserved"},
		// Slugs are lower case only, so a capital is no way around the rule.
		{"capitalised", "Genesis", owner, commands.KindInvalid, "invalid_field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tip := n.log.Tip().Seq
			_, err := n.cmd.Bootstrap(context.Background(), tc.actor, commands.BootstrapInput{DisplayName: "Squatter", PublicID: ptr(tc.slug)})
			n.refused(t, err, tip, tc.kind, tc.code, "public_id")
		})
	}
	// A name that only starts like a reserved one is free.
	for _, slug := range []string{"genesis-miner", "nodeworks", "orderly"} {
		if got := n.bootstrap("Free", slug).PublicID; got != slug {
			t.Errorf("public_id %q, want %q", got, slug)
		}
	}
	// A generated slug steps over a reserved one as over a taken one.
	for _, tc := range []struct{ name, want string }{
		{"Genesis", "genesis-2"},
		{"Admin", "admin-2"},
		{"Mars", "mars-2"},
	} {
		if got := n.bootstrap(tc.name).PublicID; got != tc.want {
			t.Errorf("bootstrap %q: public_id %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReservedSlugsOnRename: an identity cannot rename itself to a reserved
// slug, whichever token asks.
func TestReservedSlugsOnRename(t *testing.T) {
	n := newIDNodeGoverning(t, "genesis", "mars")
	ada := n.bootstrap("Ada", "ada")
	for _, slug := range []string{"genesis", "mars", "frontier", "root", "civnode", "oracle"} {
		for _, a := range []commands.Actor{owner, agentActor(ada.AgentDID)} {
			tip := n.log.Tip().Seq
			_, err := n.cmd.UpdatePublicIdentity(context.Background(), a, commands.PublicIdentityInput{
				AgentDID: ada.AgentDID, DisplayName: "Ada", PublicID: ptr(slug)})
			n.refused(t, err, tip, commands.KindConflict, "slug_reserved", "public_id")
		}
	}
	if id, _ := found(n.read.IdentityByDID(ada.AgentDID)); id.PublicID != "ada" {
		t.Errorf("public_id = %q after refused renames", id.PublicID)
	}
}

// TestReservedSlugHeldFromBefore: the chain is history. An identity that took a
// slug before it was reserved keeps it and may update itself under it; once it
// lets the slug go, nobody can take it again.
func TestReservedSlugHeldFromBefore(t *testing.T) {
	n := newIDNodeGoverning(t, "genesis")
	ctx := context.Background()
	// A chain written before the rule: identity.bootstrapped with the slug
	// "genesis", appended as an older node did, not through today's command.
	salt := "00112233445566778899aabbccddeeff"
	did, err := commands.AgentDID(n.key, salt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.log.Append(ctx, eventlog.Draft{Type: events.TypeIdentityBootstrapped, Payload: events.IdentityBootstrapped{
		AgentDID: did, PublicID: "genesis", DisplayName: "Old squatter", KeySalt: salt}}); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []*string{nil, ptr("genesis")} {
		if _, err := n.cmd.UpdatePublicIdentity(ctx, owner, commands.PublicIdentityInput{
			AgentDID: did, DisplayName: "Old squatter", PublicID: keep}); err != nil {
			t.Fatalf("update keeping the slug held from before: %v", err)
		}
	}
	if _, err := n.cmd.UpdatePublicIdentity(ctx, owner, commands.PublicIdentityInput{
		AgentDID: did, DisplayName: "Renamed", PublicID: ptr("renamed")}); err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip().Seq
	_, err = n.cmd.UpdatePublicIdentity(ctx, owner, commands.PublicIdentityInput{
		AgentDID: did, DisplayName: "Renamed", PublicID: ptr("genesis")})
	n.refused(t, err, tip, commands.KindConflict, "slug_reserved", "public_id")
}
