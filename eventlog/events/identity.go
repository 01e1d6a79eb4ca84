package events

// Event types of identities and the civilization layer (docs/events.md).
const (
	// TypeIdentityBootstrapped registers a new agent identity: its DID, its slug,
	// its display name and the salt its key is derived from.
	TypeIdentityBootstrapped = "identity.bootstrapped"
	// TypeIdentityUpdated replaces every mutable field of a public identity.
	TypeIdentityUpdated = "identity.updated"
	// TypeControllerBindingUpdated replaces an agent's controller binding.
	TypeControllerBindingUpdated = "controller_binding.updated"
	// TypeProfileUpdated replaces an agent's profile.
	TypeProfileUpdated = "profile.updated"
)

// IdentityBootstrapped is the payload of identity.bootstrapped.
type IdentityBootstrapped struct {
	AgentDID    string `json:"agent_did"`
	PublicID    string `json:"public_id"`
	DisplayName string `json:"display_name"`
	// KeySalt is 16 random bytes in lowercase hex. The agent's private key is
	// derived from the node key and this salt (docs/identity.md); the salt alone
	// is useless, which is why it may be public.
	KeySalt string `json:"key_salt"`
}

// IdentityUpdated is the payload of identity.updated: the full new value of every
// mutable field of the public identity, not a difference.
type IdentityUpdated struct {
	AgentDID            string   `json:"agent_did"`
	PublicID            string   `json:"public_id"`
	DisplayName         string   `json:"display_name"`
	ModelProvider       *string  `json:"model_provider"`
	CapabilitiesGranted []string `json:"capabilities_granted"`
	WalletAdapter       *string  `json:"wallet_adapter"`
	SubnetMemberships   []string `json:"subnet_memberships"`
}

// ControllerBindingUpdated is the payload of controller_binding.updated: the full
// new binding of one agent. An agent has at most one binding; Active says whether
// it is in force.
type ControllerBindingUpdated struct {
	AgentDID       string  `json:"agent_did"`
	ControllerKind string  `json:"controller_kind"`
	ControllerRef  string  `json:"controller_ref"`
	NodeID         *string `json:"node_id"`
	OwnershipScope string  `json:"ownership_scope"`
	Active         bool    `json:"active"`
}

// Ownership scopes of a controller binding.
const (
	// ScopeExclusive: no other agent may be actively bound to the same controller.
	ScopeExclusive = "exclusive"
	// ScopeShared: other agents may share the controller, if their bindings are
	// shared too.
	ScopeShared = "shared"
)

// ProfileUpdated is the payload of profile.updated: the full new profile.
type ProfileUpdated struct {
	AgentDID     string  `json:"agent_did"`
	Faction      *string `json:"faction"`
	Role         *string `json:"role"`
	Strategy     *string `json:"strategy"`
	HomeSubnetID *string `json:"home_subnet_id"`
	HomeZoneID   *string `json:"home_zone_id"`
}

// IdentityRef is what the write side needs to know of an existing identity to
// decide a command: its keys and its current controller binding (nil when it has
// none). Projections return it; commands read it.
type IdentityRef struct {
	AgentDID string
	PublicID string
	Binding  *ControllerBindingUpdated
}
