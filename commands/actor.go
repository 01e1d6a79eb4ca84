package commands

// Actor is who a request acts as, resolved from its bearer token by the HTTP layer
// (docs/tokens.md). Commands decide what an actor may do; the token itself never
// reaches this package.
type Actor struct {
	// TokenID names the token in audit entries ("token:<id>"); not secret.
	TokenID string
	// Kind is the token's kind.
	Kind ActorKind
	// AgentDID is the one identity an agent token acts for; empty otherwise.
	AgentDID string
	// Governs lists the subnets the owner is governance actor for (--governs).
	Governs []string
}

// ActorKind is what a token may do.
type ActorKind uint8

const (
	// ActorOwner holds the control token: it acts for the node DID, for every
	// identity whose active controller binding lives on this node, and governs the
	// node's governed subnets.
	ActorOwner ActorKind = iota + 1
	// ActorAgent acts for exactly one identity (civnode token create --acts-for),
	// as long as that identity is not handed to another node (authorize.go).
	ActorAgent
	// ActorObserver may only read the event log, the stream and health.
	ActorObserver
)

func (k ActorKind) String() string {
	switch k {
	case ActorOwner:
		return "owner"
	case ActorAgent:
		return "agent"
	case ActorObserver:
		return "observer"
	}
	return "unknown"
}
