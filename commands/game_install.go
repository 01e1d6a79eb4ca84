package commands

import (
	"context"
	"fmt"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// InstallInput is the body of the install endpoints
// (POST /v1/game/starter-missions/bootstrap, POST /v1/game/mission-pack/bootstrap):
// an empty object; it has no fields.
type InstallInput struct{}

// InstallResult is what an install decided.
type InstallResult struct {
	// Published reports whether this call published the set. It is false when
	// the set was installed before, by an earlier call or a concurrent one that
	// was decided first; then nothing was appended.
	Published bool
	// Events are the durable events appended: one mission.created per template,
	// then the set's installed event. Empty when Published is false.
	Events []eventlog.Event
}

// gameSet is one installable set of templates.
type gameSet struct {
	name      string // for error messages: "starter set", "mission pack genesis-expansion"
	templates []catalog.MissionTemplate
	installed func() (bool, error) // inside a decision: is the set installed already?
	// record builds the set's installed event payload.
	record func(subnet, installedBy string, templateIDs, missionIDs []string) any
	typ    string
}

// install publishes set as missions of a's governed subnet and records it, in
// one decision, unless the decision finds the set installed already.
//
// Only the owner installs (403 forbidden): it is the governance actor of the
// node's subnets, and the game's missions are published by the first of them
// (Actor.Governs, --governs, default genesis) as planetary_government. An owner
// that governs no subnet cannot publish them: 403 forbidden as well.
func (g *Game) install(ctx context.Context, a Actor, set gameSet) (InstallResult, error) {
	if err := RequireOwner(a); err != nil {
		return InstallResult{}, err
	}
	if len(a.Governs) == 0 {
		return InstallResult{}, Forbidden("forbidden",
			"this node governs no subnet, so no government can publish the %s; start the node with --governs SUBNET", set.name)
	}
	subnet := a.Governs[0]
	if len(set.templates) == 0 {
		return InstallResult{}, fmt.Errorf("install %s: the catalog has no templates for it", set.name)
	}
	// Everything but the decision is prepared here, off the log's serial
	// goroutine: inputs validated by the mission rules, ids drawn, payloads
	// encoded.
	drafts := make([]*missionDraft, len(set.templates))
	templateIDs := make([]string, len(set.templates))
	missionIDs := make([]string, len(set.templates))
	for i, t := range set.templates {
		d, err := g.mission.newMissionDraft(a, templateMission(t, subnet))
		if err != nil {
			// The catalog's rules make every template a valid mission, so this is
			// a fault of the node (500), not of the empty request body: %v, not
			// %w, keeps the field error from reaching the client as a 400.
			return InstallResult{}, fmt.Errorf("install %s: template %s is not a valid mission: %v", set.name, t.ID, err)
		}
		drafts[i], templateIDs[i], missionIDs[i] = d, t.ID, d.MissionID()
	}
	record, err := eventlog.Canonicalize(set.record(subnet, g.log.NodeDID(), templateIDs, missionIDs))
	if err != nil {
		return InstallResult{}, fmt.Errorf("encode %s: %w", set.typ, err)
	}
	evs, err := g.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		if done, err := set.installed(); err != nil || done {
			return nil, err
		}
		out := make([]eventlog.Draft, 0, len(drafts)+1)
		for _, d := range drafts {
			dr, err := d.draft()
			if err != nil {
				return nil, err
			}
			out = append(out, dr)
		}
		return append(out, eventlog.Draft{Type: set.typ, Payload: record}), nil
	})
	if err != nil {
		return InstallResult{}, err
	}
	return InstallResult{Published: len(evs) > 0, Events: evs}, nil
}

// templateMission is the create input of a template published by subnet's
// government: the template's fields, no zone.
func templateMission(t catalog.MissionTemplate, subnet string) CreateMissionInput {
	r := t.Reward
	return CreateMissionInput{
		Title: t.Title, Description: t.Description,
		Publisher: subnet, PublisherKind: events.PublisherPlanetaryGovernment,
		Domain: t.Domain, SubnetID: subnet,
		RequiredRole: t.RequiredRole, RequiredFaction: t.RequiredFaction,
		Reward: &RewardInput{AgentCredit: &r.AgentCredit, Reputation: &r.Reputation,
			Capacity: &r.Capacity, TreasuryShareCredit: &r.TreasuryShareCredit},
		Payload: t.Payload,
	}
}
