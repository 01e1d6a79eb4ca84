package projections

import (
	"slices"

	"github.com/civnode/civnode/eventlog/events"
)

// IdentityRecord is an agent identity as the API shows it (wire.md §8). Unset
// optional strings are null and lists are [] when empty.
type IdentityRecord struct {
	AgentDID    string `json:"agent_did"`
	PublicID    string `json:"public_id"`
	DisplayName string `json:"display_name"`
	// ControllerID is the controller_ref of the active binding; null without one.
	ControllerID        *string  `json:"controller_id"`
	ModelProvider       *string  `json:"model_provider"`
	CapabilitiesGranted []string `json:"capabilities_granted"`
	// ControllerBinding is the agent's binding, active or not (its active field
	// says which); null when it never had one.
	ControllerBinding *BindingRecord `json:"controller_binding"`
	WalletAdapter     *string        `json:"wallet_adapter"`
	SubnetMemberships []string       `json:"subnet_memberships"`
	Stats             Stats          `json:"stats"`
	CreatedAt         string         `json:"created_at"`
	// UpdatedAt is the timestamp of the last event that changed a field of this
	// record (identity.updated, controller_binding.updated).
	UpdatedAt string `json:"updated_at"`
}

// BindingRecord is a controller binding.
type BindingRecord struct {
	AgentDID       string  `json:"agent_did"`
	ControllerKind string  `json:"controller_kind"`
	ControllerRef  string  `json:"controller_ref"`
	NodeID         *string `json:"node_id"`
	OwnershipScope string  `json:"ownership_scope"`
	Active         bool    `json:"active"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
}

// ProfileRecord is an agent's profile. Every identity has one from its bootstrap.
type ProfileRecord struct {
	AgentDID     string  `json:"agent_did"`
	Faction      *string `json:"faction"`
	Role         *string `json:"role"`
	Strategy     *string `json:"strategy"`
	HomeSubnetID *string `json:"home_subnet_id"`
	HomeZoneID   *string `json:"home_zone_id"`
	UpdatedAt    string  `json:"updated_at"`
}

// Stats are an agent's runtime statistics: what the payment.settled events of
// its settled missions paid it, and how many there were.
type Stats struct {
	Credit            int64 `json:"credit"`
	Reputation        int64 `json:"reputation"`
	Capacity          int64 `json:"capacity"`
	MissionsCompleted int64 `json:"missions_completed"`
}

// SupervisedIdentity is an identity record with its profile, for the operator's
// supervision list.
type SupervisedIdentity struct {
	IdentityRecord
	Profile ProfileRecord `json:"profile"`
}

// The conversions below copy everything a caller could modify, so a record stays
// valid after the model moves on. Strings behind pointers are never written to.

func (id *identity) record() IdentityRecord {
	r := IdentityRecord{
		AgentDID: id.did, PublicID: id.publicID, DisplayName: id.displayName,
		ModelProvider: id.modelProvider, CapabilitiesGranted: slices.Clone(id.capabilities),
		WalletAdapter: id.walletAdapter, SubnetMemberships: slices.Clone(id.subnets),
		Stats: id.stats, CreatedAt: id.createdAt, UpdatedAt: id.updatedAt,
	}
	if id.binding != nil {
		b := id.binding.record()
		r.ControllerBinding = &b
		if b.Active {
			ref := b.ControllerRef
			r.ControllerID = &ref
		}
	}
	return r
}

func (b *binding) record() BindingRecord {
	return BindingRecord{
		AgentDID: b.AgentDID, ControllerKind: b.ControllerKind, ControllerRef: b.ControllerRef,
		NodeID: b.NodeID, OwnershipScope: b.OwnershipScope, Active: b.Active,
		CreatedAt: b.createdAt, UpdatedAt: b.updatedAt,
	}
}

func (p *profile) record() ProfileRecord {
	return ProfileRecord{
		AgentDID: p.AgentDID, Faction: p.Faction, Role: p.Role, Strategy: p.Strategy,
		HomeSubnetID: p.HomeSubnetID, HomeZoneID: p.HomeZoneID, UpdatedAt: p.updatedAt,
	}
}

func (id *identity) ref() events.IdentityRef {
	r := events.IdentityRef{AgentDID: id.did, PublicID: id.publicID}
	if id.binding != nil {
		b := id.binding.ControllerBindingUpdated
		r.Binding = &b
	}
	return r
}
