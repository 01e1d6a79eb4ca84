package commands

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// CreateMissionInput publishes a mission (POST /v1/core/missions).
type CreateMissionInput struct {
	Title       string `json:"title"`       // required, 1..200 characters
	Description string `json:"description"` // required, 1..10000 characters
	// Publisher is a public_id the token acts for (PublisherKind agent or
	// organization) or a subnet the token governs (planetary_government).
	Publisher       string       `json:"publisher"`
	PublisherKind   string       `json:"publisher_kind"`
	Domain          string       `json:"domain"`    // required slug
	SubnetID        string       `json:"subnet_id"` // required slug
	ZoneID          *string      `json:"zone_id"`
	RequiredRole    *string      `json:"required_role"`    // a role of the catalog; null: any role
	RequiredFaction *string      `json:"required_faction"` // a faction of the catalog; null: open to all
	Reward          *RewardInput `json:"reward"`           // required, every field
	// Payload is any JSON object for the claimer; omitted or null is {}.
	Payload json.RawMessage `json:"payload"`
}

// check validates every field that needs no state and returns the payload of
// mission.created without its mission_id and issuer_did.
func (in CreateMissionInput) check(roles, factions []string) (events.MissionCreated, error) {
	var pl events.MissionCreated
	if in.Title == "" {
		return pl, Missing("title")
	}
	if err := checkText("title", in.Title, maxTitle); err != nil {
		return pl, err
	}
	if err := checkLongText("description", in.Description, maxDescription); err != nil {
		return pl, err
	}
	if in.Publisher == "" {
		return pl, Missing("publisher")
	}
	if !IsSlug(in.Publisher) {
		return pl, Invalid("publisher", "publisher must be a public_id or a subnet id: 1 to 64 characters of a-z, 0-9 and -")
	}
	if in.PublisherKind == "" {
		return pl, Missing("publisher_kind")
	}
	if !slices.Contains(PublisherKinds, in.PublisherKind) {
		return pl, Invalid("publisher_kind", "publisher_kind must be one of agent, organization, planetary_government")
	}
	if err := checkSlug("domain", in.Domain); err != nil {
		return pl, err
	}
	if err := checkSlug("subnet_id", in.SubnetID); err != nil {
		return pl, err
	}
	if err := checkSubnetID("zone_id", in.ZoneID); err != nil {
		return pl, err
	}
	if err := checkOptionalChoice("required_role", in.RequiredRole, roles); err != nil {
		return pl, err
	}
	if err := checkOptionalChoice("required_faction", in.RequiredFaction, factions); err != nil {
		return pl, err
	}
	reward, err := in.Reward.reward()
	if err != nil {
		return pl, err
	}
	payload, err := canonicalMissionPayload(in.Payload)
	if err != nil {
		return pl, err
	}
	return events.MissionCreated{
		Title: in.Title, Description: in.Description, Publisher: in.Publisher, PublisherKind: in.PublisherKind,
		Domain: in.Domain, SubnetID: in.SubnetID, ZoneID: in.ZoneID, RequiredRole: in.RequiredRole,
		RequiredFaction: in.RequiredFaction, Reward: reward, Payload: payload,
	}, nil
}

// Create publishes a mission in state created and appends mission.created. The
// publisher must be an identity the actor acts for, publishing as agent or
// organization, or a subnet the actor governs, publishing as
// planetary_government (403 forbidden otherwise; 400 on publisher_kind when the
// kind does not fit the publisher).
func (c *Mission) Create(ctx context.Context, a Actor, in CreateMissionInput) (MissionResult, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return MissionResult{}, err
	}
	d, err := c.newMissionDraft(a, in)
	if err != nil {
		return MissionResult{}, err
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		dr, err := d.draft()
		if err != nil {
			return nil, err
		}
		return []eventlog.Draft{dr}, nil
	})
	if err != nil {
		return MissionResult{}, err
	}
	return MissionResult{MissionID: d.MissionID(), Events: evs}, nil
}

// issuer resolves a publisher to the DID it publishes as, checking that a may
// act for it and that kind fits it. It runs inside a decision.
func (c *Mission) issuer(a Actor, publisher, kind string) (string, error) {
	id, isIdentity, err := c.ids.IdentityBySlug(publisher)
	if err != nil {
		return "", err
	}
	governed := a.GovernsSubnet(publisher)
	if kind == events.PublisherPlanetaryGovernment {
		switch {
		case governed:
			return c.log.NodeDID(), nil
		case isIdentity && a.ActsFor(c.log.NodeDID(), id):
			return "", Invalid("publisher_kind", "%s is an identity; an identity publishes as agent or organization", publisher)
		}
		return "", forbiddenField("publisher", "this token does not govern subnet %s", publisher)
	}
	switch {
	case isIdentity && a.ActsFor(c.log.NodeDID(), id):
		return id.AgentDID, nil
	case !isIdentity && governed:
		return "", Invalid("publisher_kind", "%s is a subnet; a subnet publishes as planetary_government", publisher)
	}
	return "", forbiddenField("publisher", "this token may not act for %s", publisher)
}
