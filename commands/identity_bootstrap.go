package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// BootstrapInput registers a new identity (POST /v1/civilization/bootstrap-identity).
type BootstrapInput struct {
	DisplayName string `json:"display_name"` // required
	// PublicID is the slug; generated from DisplayName when nil.
	PublicID     *string `json:"public_id"`
	Faction      *string `json:"faction"`
	Role         *string `json:"role"`
	Strategy     *string `json:"strategy"`
	HomeSubnetID *string `json:"home_subnet_id"`
	HomeZoneID   *string `json:"home_zone_id"`
}

// BootstrapResult is what Bootstrap decided.
type BootstrapResult struct {
	AgentDID string
	PublicID string
	// Events are identity.bootstrapped and profile.updated, durable.
	Events []eventlog.Event
}

// Bootstrap registers a new identity with a fresh Ed25519 did:key, its public slug
// and its initial profile. Only the owner may bootstrap. identity.bootstrapped and
// profile.updated are appended as one unit. A given public_id that is taken is 409
// slug_taken, one that is reserved 409 slug_reserved (identity_reserved.go); an
// omitted one is generated from the display name and made unique with -2, -3, ….
func (c *Identity) Bootstrap(ctx context.Context, a Actor, in BootstrapInput) (BootstrapResult, error) {
	if err := RequireOwner(a); err != nil {
		return BootstrapResult{}, err
	}
	if err := checkDisplayName(in.DisplayName); err != nil {
		return BootstrapResult{}, err
	}
	if in.PublicID != nil {
		if err := checkPublicID(*in.PublicID); err != nil {
			return BootstrapResult{}, err
		}
		if err := c.checkSlugClaim(a, *in.PublicID); err != nil {
			return BootstrapResult{}, err
		}
	}
	profile := ProfileInput{Faction: in.Faction, Role: in.Role, Strategy: in.Strategy,
		HomeSubnetID: in.HomeSubnetID, HomeZoneID: in.HomeZoneID}
	if err := profile.check(c.catalog); err != nil {
		return BootstrapResult{}, err
	}
	// The key is derived here, off the sequencer: decide functions must be quick.
	c.randMu.Lock()
	salt, err := newKeySalt(c.rand)
	c.randMu.Unlock()
	if err != nil {
		return BootstrapResult{}, err
	}
	if c.key == nil {
		return BootstrapResult{}, eventlog.ErrReadOnly
	}
	did, err := AgentDID(c.key, salt)
	if err != nil {
		return BootstrapResult{}, err
	}
	var slug string
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		if _, taken, err := c.ids.IdentityByDID(did); err != nil {
			return nil, err
		} else if taken {
			return nil, errDIDCollision
		}
		if in.PublicID != nil {
			slug = *in.PublicID
			if _, taken, err := c.ids.IdentityBySlug(slug); err != nil {
				return nil, err
			} else if taken {
				return nil, Conflict("slug_taken", "public_id", "public_id %s is taken", slug)
			}
		} else {
			var err error
			if slug, err = c.freeSlug(a, slugBase(in.DisplayName)); err != nil {
				return nil, err
			}
		}
		return []eventlog.Draft{
			{Type: events.TypeIdentityBootstrapped, Payload: events.IdentityBootstrapped{
				AgentDID: did, PublicID: slug, DisplayName: in.DisplayName, KeySalt: salt,
			}},
			{Type: events.TypeProfileUpdated, Payload: profile.payload(did)},
		}, nil
	})
	if err != nil {
		return BootstrapResult{}, err
	}
	return BootstrapResult{AgentDID: did, PublicID: slug, Events: evs}, nil
}

// freeSlug returns the first candidate for base that a may claim and no
// identity holds. It runs inside a decision, where the model cannot change
// underneath it.
func (c *Identity) freeSlug(a Actor, base string) (string, error) {
	for i := 1; ; i++ {
		s := slugCandidate(base, i)
		if c.reservedSlug(a, s) != "" {
			continue
		}
		if _, taken, err := c.ids.IdentityBySlug(s); err != nil || !taken {
			return s, err
		}
	}
}
