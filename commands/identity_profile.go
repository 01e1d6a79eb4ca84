package commands

import (
	"context"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// ProfileInput replaces an agent's profile (POST /v1/civilization/profile). Like
// the public identity, the profile is replaced whole: an omitted field becomes
// null.
type ProfileInput struct {
	AgentDID     string  `json:"agent_did"` // required
	Faction      *string `json:"faction"`
	Role         *string `json:"role"`
	Strategy     *string `json:"strategy"`
	HomeSubnetID *string `json:"home_subnet_id"`
	HomeZoneID   *string `json:"home_zone_id"`
}

// check validates every field but AgentDID (shared with Bootstrap); cat holds
// the accepted faction, role and strategy values.
func (in ProfileInput) check(cat *catalog.Catalog) error {
	for _, c := range []struct {
		field    string
		v        *string
		accepted []string
	}{
		{"faction", in.Faction, cat.FactionIDs()},
		{"role", in.Role, cat.RoleIDs()},
		{"strategy", in.Strategy, cat.StrategyIDs()},
	} {
		if err := checkChoice(c.field, c.v, c.accepted); err != nil {
			return err
		}
	}
	if err := checkSubnetID("home_subnet_id", in.HomeSubnetID); err != nil {
		return err
	}
	if err := checkSubnetID("home_zone_id", in.HomeZoneID); err != nil {
		return err
	}
	if in.HomeZoneID != nil && in.HomeSubnetID == nil {
		// A zone lies inside a subnet; without the subnet it names nothing.
		return Invalid("home_zone_id", "home_zone_id needs home_subnet_id")
	}
	return nil
}

func (in ProfileInput) payload(agentDID string) events.ProfileUpdated {
	return events.ProfileUpdated{AgentDID: agentDID, Faction: in.Faction, Role: in.Role,
		Strategy: in.Strategy, HomeSubnetID: in.HomeSubnetID, HomeZoneID: in.HomeZoneID}
}

// UpdateProfile appends profile.updated with the full new profile.
func (c *Identity) UpdateProfile(ctx context.Context, a Actor, in ProfileInput) (eventlog.Event, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return eventlog.Event{}, err
	}
	if err := checkAgentDID(in.AgentDID); err != nil {
		return eventlog.Event{}, err
	}
	if err := in.check(c.catalog); err != nil {
		return eventlog.Event{}, err
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		id, err := c.lookup(a, in.AgentDID)
		if err != nil {
			return nil, err
		}
		return []eventlog.Draft{{Type: events.TypeProfileUpdated, Payload: in.payload(id.AgentDID)}}, nil
	})
	return firstEvent(evs), err
}
