package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// ClaimMissionInput claims a mission (POST /v1/core/missions/{mission_id}/claim).
type ClaimMissionInput struct {
	// Claimer is the public_id of the identity that claims; the token must act
	// for it.
	Claimer string `json:"claimer"`
}

// Claim gives a created mission to one eligible identity and appends
// mission.accepted. In order: 404 mission_not_found; 404 identity_not_found for
// an unknown claimer; 403 forbidden when the token may not act for it; 403
// not_eligible when the claimer published the mission, has no active controller
// binding, or its profile lacks the required role or faction (the message says
// which); 409 already_claimed when another identity holds the mission, and 409
// invalid_state when it is completed or settled.
func (c *Mission) Claim(ctx context.Context, a Actor, missionID string, in ClaimMissionInput) (MissionResult, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return MissionResult{}, err
	}
	if in.Claimer == "" {
		return MissionResult{}, Missing("claimer")
	}
	if !publicIDPattern.MatchString(in.Claimer) {
		return MissionResult{}, Invalid("claimer", "claimer must be a public_id: 3 to 40 characters of a-z, 0-9 and -")
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		m, err := c.mission(missionID)
		if err != nil {
			return nil, err
		}
		id, ok, err := c.ids.IdentityBySlug(in.Claimer)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, NotFound("identity_not_found", "claimer", "no identity has public_id %s", in.Claimer)
		}
		if !a.ActsFor(c.log.NodeDID(), id) {
			return nil, forbiddenField("claimer", "this token may not act for %s", in.Claimer)
		}
		profile, _, err := c.profiles.IdentityProfile(id.AgentDID)
		if err != nil {
			return nil, err
		}
		if err := eligible(m, id, profile); err != nil {
			return nil, err
		}
		switch m.State {
		case events.StateCreated:
		case events.StateClaimed:
			return nil, Conflict("already_claimed", "", "mission %s is already claimed by %s", m.MissionID, m.Claimer)
		default:
			return nil, invalidState("mission %s is %s; only a created mission can be claimed", m.MissionID, m.State)
		}
		return []eventlog.Draft{{Type: events.TypeMissionAccepted, Payload: events.MissionAccepted{
			MissionID: m.MissionID, IssuerDID: m.IssuerDID, Claimer: id.PublicID, ClaimerDID: id.AgentDID, Reward: m.Reward,
		}}}, nil
	})
	if err != nil {
		return MissionResult{}, err
	}
	return MissionResult{MissionID: missionID, Events: evs}, nil
}

// Claimable reports whether a, acting for the identity id with its profile,
// may claim the mission m now: m is created, a acts for id, and id is
// eligible. It is Claim's rules short of the race that Claim decides, so what
// the game's bootstrap guide proposes is what Claim accepts.
func (c *Mission) Claimable(a Actor, m events.MissionRef, id events.IdentityRef, profile events.ProfileUpdated) bool {
	return m.State == events.StateCreated && a.ActsFor(c.log.NodeDID(), id) && eligible(m, id, profile) == nil
}

// ActiveController reports whether id has an active controller binding: without
// one an agent cannot receive tasks (docs/identity.md).
func ActiveController(id events.IdentityRef) bool {
	return id.Binding != nil && id.Binding.Active
}

// eligible applies the claim rules that depend on who claims: not its own
// mission, an active controller binding, and the required role and faction.
func eligible(m events.MissionRef, id events.IdentityRef, profile events.ProfileUpdated) error {
	if id.AgentDID == m.IssuerDID {
		return notEligible("%s published this mission and may not claim it", id.PublicID)
	}
	if !ActiveController(id) {
		return notEligible("%s has no active controller binding; bind a controller first", id.PublicID)
	}
	if r := m.RequiredRole; r != nil && (profile.Role == nil || *profile.Role != *r) {
		return notEligible("the mission requires role %s; %s has %s", *r, id.PublicID, describe(profile.Role, "no role"))
	}
	if f := m.RequiredFaction; f != nil && (profile.Faction == nil || *profile.Faction != *f) {
		return notEligible("the mission requires faction %s; %s has %s", *f, id.PublicID, describe(profile.Faction, "no faction"))
	}
	return nil
}

func describe(v *string, none string) string {
	if v == nil {
		return none
	}
	return *v
}
