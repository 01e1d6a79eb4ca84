package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// PublicIdentityInput replaces the mutable fields of a public identity
// (POST /v1/civilization/public-identity). Every field but PublicID is replaced by
// what is sent: an omitted optional field becomes null, an omitted list [].
type PublicIdentityInput struct {
	AgentDID    string `json:"agent_did"`    // required; the key, never changes
	DisplayName string `json:"display_name"` // required
	// PublicID, when given, changes the slug (409 slug_taken if another identity
	// holds it, 409 slug_reserved if no identity may); nil keeps the current one.
	PublicID            *string  `json:"public_id"`
	ModelProvider       *string  `json:"model_provider"`
	CapabilitiesGranted []string `json:"capabilities_granted"`
	WalletAdapter       *string  `json:"wallet_adapter"`
	SubnetMemberships   []string `json:"subnet_memberships"`
}

// UpdatePublicIdentity appends identity.updated with the full new public identity.
func (c *Identity) UpdatePublicIdentity(ctx context.Context, a Actor, in PublicIdentityInput) (eventlog.Event, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return eventlog.Event{}, err
	}
	if err := checkAgentDID(in.AgentDID); err != nil {
		return eventlog.Event{}, err
	}
	if err := checkDisplayName(in.DisplayName); err != nil {
		return eventlog.Event{}, err
	}
	if in.PublicID != nil {
		if err := checkPublicID(*in.PublicID); err != nil {
			return eventlog.Event{}, err
		}
	}
	if err := checkOptionalText("model_provider", in.ModelProvider, maxLabel); err != nil {
		return eventlog.Event{}, err
	}
	if err := checkOptionalText("wallet_adapter", in.WalletAdapter, maxLabel); err != nil {
		return eventlog.Event{}, err
	}
	caps, err := checkList("capabilities_granted", in.CapabilitiesGranted, isLabel,
		"1 to 128 characters without control characters")
	if err != nil {
		return eventlog.Event{}, err
	}
	subnets, err := checkList("subnet_memberships", in.SubnetMemberships, isSubnetID,
		"1 to 64 characters of a-z, 0-9 and -")
	if err != nil {
		return eventlog.Event{}, err
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		id, err := c.lookup(a, in.AgentDID)
		if err != nil {
			return nil, err
		}
		slug := id.PublicID
		if in.PublicID != nil && *in.PublicID != slug {
			slug = *in.PublicID
			// Only a new claim is checked: a slug held from before the rule is
			// kept (identity_reserved.go).
			if err := c.checkSlugClaim(a, slug); err != nil {
				return nil, err
			}
			if other, taken, err := c.ids.IdentityBySlug(slug); err != nil {
				return nil, err
			} else if taken && other.AgentDID != id.AgentDID {
				return nil, Conflict("slug_taken", "public_id", "public_id %s is taken", slug)
			}
		}
		return []eventlog.Draft{{Type: events.TypeIdentityUpdated, Payload: events.IdentityUpdated{
			AgentDID: id.AgentDID, PublicID: slug, DisplayName: in.DisplayName,
			ModelProvider: in.ModelProvider, CapabilitiesGranted: caps,
			WalletAdapter: in.WalletAdapter, SubnetMemberships: subnets,
		}}}, nil
	})
	return firstEvent(evs), err
}
