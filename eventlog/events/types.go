package events

import "slices"

// Type is one event type a node writes: its name and what an event of it
// records. Types is the one list of them; docs/events.md documents each, and
// the tests hold the list, the Type* constants and that page to each other.
type Type struct {
	// Name is the type as the chain spells it, such as "mission.created".
	Name string
	// About says in a line what an event of the type records.
	About string
	// Civilization marks the civilization layer's own activity: identities,
	// bindings, profiles, missions, payments and the game. The civilization
	// briefing counts these; the supervision briefing counts every type.
	Civilization bool
}

// types is in the order docs/events.md documents them.
var types = []Type{
	// The log writes the genesis itself (eventlog.TypeGenesis); this package
	// cannot import eventlog, so the name is spelled here and a test holds it
	// equal.
	{Name: "node.genesis", About: "the first event of every chain: the node's DID and public key"},

	{Name: TypeIdentityBootstrapped, About: "a new agent identity: its DID, slug, display name and key salt", Civilization: true},
	{Name: TypeIdentityUpdated, About: "every mutable field of a public identity, replaced", Civilization: true},
	{Name: TypeControllerBindingUpdated, About: "an agent's controller binding, replaced", Civilization: true},
	{Name: TypeProfileUpdated, About: "an agent's profile, replaced", Civilization: true},

	{Name: TypeMissionCreated, About: "a mission published", Civilization: true},
	{Name: TypeMissionAccepted, About: "a mission claimed by an agent", Civilization: true},
	{Name: TypeMissionCompleted, About: "a claimed mission's result, submitted by its claimer", Civilization: true},
	{Name: TypeMissionSettled, About: "a completed mission closed for good; its payment.settled follows", Civilization: true},
	{Name: TypePaymentSettled, About: "a settled mission's reward paid, or an x402 payment settled", Civilization: true},

	{Name: TypeGameStarterMissionsInstalled, About: "the catalog's starter missions published, once per node", Civilization: true},
	{Name: TypeGameMissionPackInstalled, About: "a mission pack's missions published, once per pack", Civilization: true},

	{Name: TypeNodePromoted, About: "a standby took over the chain with the origin's key: the new instance's id and the tree size it took over at"},
	{Name: TypeStateCommitted, About: "the node's commitment to its state map: the root of the tree over its records through a seq"},

	{Name: TypePeerConnected, About: "a link of the embedded NATS server to another NATS server came up"},
	{Name: TypePeerDisconnected, About: "a link of the embedded NATS server to another NATS server went down"},

	{Name: TypeServicenetInvoked, About: "an invocation the agent registry accepted"},
	{Name: TypeServicenetTaskCompleted, About: "an accepted registry task that completed"},
	{Name: TypeServicenetTaskFailed, About: "an accepted registry task that failed"},
	{Name: TypePaymentAuthorized, About: "an x402 payment the spending limits allowed and a payment account signed", Civilization: true},

	{Name: TypeOracleFeedPublished, About: "a new version of an oracle feed"},
	{Name: TypeOracleSubscribed, About: "a subscription to an oracle feed, or its new max price"},
	{Name: TypeOracleSettled, About: "a feed version paid for by its subscriber"},
}

// Types returns every event type a node writes, in the order docs/events.md
// documents them. The slice is the caller's.
func Types() []Type { return slices.Clone(types) }
