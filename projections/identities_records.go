package projections

import (
	"github.com/civnode/civnode/eventlog/events"
)

// IdentityRecord is an agent identity as the API shows it (docs/api.md). Unset
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
// its settled missions paid it, and how many there were. Credit also moves
// with the oracle: oracle.settled pays a pull's price from the subscriber's
// credit to the publisher's.
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

// identityState is an identity as the model stores it (key i/r).
type identityState struct {
	Seq         uint64 `json:"seq"` // of identity.bootstrapped: the creation order
	DID         string `json:"did"`
	PublicID    string `json:"public_id"`
	DisplayName string `json:"display_name"`
	// KeySalt is the salt the identity's key is derived from (empty for an
	// identity imported with a key of its own); never shown in a record.
	KeySalt       string        `json:"key_salt,omitempty"`
	ModelProvider *string       `json:"model_provider"`
	Capabilities  []string      `json:"capabilities"`
	WalletAdapter *string       `json:"wallet_adapter"`
	Subnets       []string      `json:"subnets"`
	CreatedAt     string        `json:"created_at"`
	UpdatedAt     string        `json:"updated_at"`
	Binding       *bindingState `json:"binding"`
	Profile       profileState  `json:"profile"`
	Stats         Stats         `json:"stats"`
	Recent        []uint64      `json:"recent"` // seqs of the agent's latest events, oldest first
}

type bindingState struct {
	events.ControllerBindingUpdated
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

type profileState struct {
	events.ProfileUpdated
	UpdatedAt string `json:"updated_at"`
}

func (id *identityState) record() IdentityRecord {
	r := IdentityRecord{
		AgentDID: id.DID, PublicID: id.PublicID, DisplayName: id.DisplayName,
		ModelProvider: id.ModelProvider, CapabilitiesGranted: nonNil(id.Capabilities),
		WalletAdapter: id.WalletAdapter, SubnetMemberships: nonNil(id.Subnets),
		Stats: id.Stats, CreatedAt: id.CreatedAt, UpdatedAt: id.UpdatedAt,
	}
	if id.Binding != nil {
		b := id.Binding.record()
		r.ControllerBinding = &b
		if b.Active {
			ref := b.ControllerRef
			r.ControllerID = &ref
		}
	}
	return r
}

func (id *identityState) supervised() SupervisedIdentity {
	return SupervisedIdentity{IdentityRecord: id.record(), Profile: id.Profile.record()}
}

func (b *bindingState) record() BindingRecord {
	return BindingRecord{
		AgentDID: b.AgentDID, ControllerKind: b.ControllerKind, ControllerRef: b.ControllerRef,
		NodeID: b.NodeID, OwnershipScope: b.OwnershipScope, Active: b.Active,
		CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt,
	}
}

func (p *profileState) record() ProfileRecord {
	return ProfileRecord{
		AgentDID: p.AgentDID, Faction: p.Faction, Role: p.Role, Strategy: p.Strategy,
		HomeSubnetID: p.HomeSubnetID, HomeZoneID: p.HomeZoneID, UpdatedAt: p.UpdatedAt,
	}
}

func (id *identityState) ref() events.IdentityRef {
	r := events.IdentityRef{AgentDID: id.DID, PublicID: id.PublicID}
	if id.Binding != nil {
		b := id.Binding.ControllerBindingUpdated
		r.Binding = &b
	}
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Ref is what the write side's rules read of the identity (commands.Actor.ActsFor,
// the claim rules).
func (r IdentityRecord) Ref() events.IdentityRef {
	ref := events.IdentityRef{AgentDID: r.AgentDID, PublicID: r.PublicID}
	if b := r.ControllerBinding; b != nil {
		ref.Binding = &events.ControllerBindingUpdated{AgentDID: b.AgentDID, ControllerKind: b.ControllerKind,
			ControllerRef: b.ControllerRef, NodeID: b.NodeID, OwnershipScope: b.OwnershipScope, Active: b.Active}
	}
	return ref
}

// Fields returns the profile as its last profile.updated set it.
func (p ProfileRecord) Fields() events.ProfileUpdated {
	return events.ProfileUpdated{AgentDID: p.AgentDID, Faction: p.Faction, Role: p.Role, Strategy: p.Strategy,
		HomeSubnetID: p.HomeSubnetID, HomeZoneID: p.HomeZoneID}
}
