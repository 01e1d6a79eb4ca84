package events

import "encoding/json"

// Event types of the mission lifecycle and its payments (docs/events.md).
const (
	// TypeMissionCreated publishes a mission: the full record as the publisher
	// gave it, with its new mission_id and the DID that issued it.
	TypeMissionCreated = "mission.created"
	// TypeMissionAccepted is a claim: one agent holds the mission from now on.
	TypeMissionAccepted = "mission.accepted"
	// TypeMissionCompleted stores the claimer's result.
	TypeMissionCompleted = "mission.completed"
	// TypeMissionSettled closes a completed mission for good. It is always
	// followed, in the same append, by the payment.settled that pays its reward.
	TypeMissionSettled = "mission.settled"
	// TypePaymentSettled moves credits. A settlement's payment names its mission;
	// other kinds of payment (x402 receipts) carry no mission_id.
	TypePaymentSettled = "payment.settled"
)

// Mission states, in the only order a mission may pass through them.
const (
	StateCreated   = "created"
	StateClaimed   = "claimed"
	StateCompleted = "completed"
	StateSettled   = "settled"
)

// Publisher kinds. An identity (public_id) publishes as agent or organization; a
// subnet this node governs publishes as planetary_government.
const (
	PublisherAgent               = "agent"
	PublisherOrganization        = "organization"
	PublisherPlanetaryGovernment = "planetary_government"
)

// Reward is what settling a mission pays (docs/api.md, "Missions"; all integers ≥ 0).
type Reward struct {
	// AgentCredit is credited to the completing agent.
	AgentCredit int64 `json:"agent_credit"`
	// Reputation is awarded to the completing agent.
	Reputation int64 `json:"reputation"`
	// Capacity is the capacity slots unlocked for the completing agent.
	Capacity int64 `json:"capacity"`
	// TreasuryShareCredit is credited to the treasury of the mission's subnet.
	TreasuryShareCredit int64 `json:"treasury_share_credit"`
}

// MissionCreated is the payload of mission.created.
type MissionCreated struct {
	MissionID   string `json:"mission_id"` // UUIDv7
	Title       string `json:"title"`
	Description string `json:"description"`
	// Publisher is a public_id (PublisherKind agent or organization) or a subnet
	// id (planetary_government), as given at creation.
	Publisher     string `json:"publisher"`
	PublisherKind string `json:"publisher_kind"`
	// IssuerDID is the DID the publisher acts as: the identity's agent_did, or the
	// node DID for a subnet this node governs. Authority over the mission follows
	// it, not the publisher string, which a later rename may give to another.
	IssuerDID       string  `json:"issuer_did"`
	Domain          string  `json:"domain"`
	SubnetID        string  `json:"subnet_id"`
	ZoneID          *string `json:"zone_id"`
	RequiredRole    *string `json:"required_role"`
	RequiredFaction *string `json:"required_faction"`
	Reward          Reward  `json:"reward"`
	// Payload is a JSON object forwarded to the claimer; {} when none was given.
	Payload json.RawMessage `json:"payload"`
}

// MissionAccepted is the payload of mission.accepted: the claim.
type MissionAccepted struct {
	MissionID string `json:"mission_id"`
	IssuerDID string `json:"issuer_did"` // the mission's issuer (mission.created)
	// Claimer is the claiming identity's public_id at the time of the claim and
	// ClaimerDID its agent_did.
	Claimer    string `json:"claimer"`
	ClaimerDID string `json:"claimer_did"`
	Reward     Reward `json:"reward"` // the reward the claimer accepted
}

// MissionCompleted is the payload of mission.completed.
type MissionCompleted struct {
	MissionID string `json:"mission_id"`
	Claimer   string `json:"claimer"` // as in mission.accepted
	Result    string `json:"result"`  // 1..262144 bytes
}

// MissionSettled is the payload of mission.settled.
type MissionSettled struct {
	MissionID string `json:"mission_id"`
	// SettledBy is the DID the settling token acted for: the publisher's
	// agent_did, or the node DID as the subnet's governance actor.
	SettledBy string `json:"settled_by"`
	Reward    Reward `json:"reward"`
}

// PaymentSettled is the payload of payment.settled for a settled mission.
type PaymentSettled struct {
	MissionID string `json:"mission_id"`
	// To is the completing agent's public_id (as claimed) and ToDID its DID,
	// which is what balances are kept by.
	To          string `json:"to"`
	ToDID       string `json:"to_did"`
	AgentCredit int64  `json:"agent_credit"`
	Reputation  int64  `json:"reputation"`
	Capacity    int64  `json:"capacity"`
	// Treasury is the subnet whose treasury receives TreasuryShareCredit.
	Treasury            string `json:"treasury"`
	TreasuryShareCredit int64  `json:"treasury_share_credit"`
}

// MissionRef is what the write side needs to know of an existing mission to
// decide a command. Projections return it; commands read it.
type MissionRef struct {
	MissionID       string
	State           string
	Publisher       string
	PublisherKind   string
	IssuerDID       string
	SubnetID        string
	RequiredRole    *string
	RequiredFaction *string
	Reward          Reward
	Claimer         string // "" until claimed
	ClaimerDID      string // "" until claimed
}
