package projections

import (
	"encoding/json"
	"slices"

	"github.com/civnode/civnode/eventlog/events"
)

// MissionRecord is a mission as the API shows it (spec "Mission", wire.md §7):
// the spec's fields in its order, then the timestamps. zone_id, required_role,
// required_faction, claimer, result and the timestamps of steps not yet taken are
// null.
type MissionRecord struct {
	MissionID       string          `json:"mission_id"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	State           string          `json:"state"`
	Publisher       string          `json:"publisher"`
	PublisherKind   string          `json:"publisher_kind"`
	Domain          string          `json:"domain"`
	SubnetID        string          `json:"subnet_id"`
	ZoneID          *string         `json:"zone_id"`
	RequiredRole    *string         `json:"required_role"`
	RequiredFaction *string         `json:"required_faction"`
	Reward          events.Reward   `json:"reward"`
	Payload         json.RawMessage `json:"payload"`
	// Claimer is the claiming identity's public_id as it was when it claimed.
	Claimer     *string `json:"claimer"`
	Result      *string `json:"result"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
	ClaimedAt   *string `json:"claimed_at"`
	CompletedAt *string `json:"completed_at"`
	SettledAt   *string `json:"settled_at"`
}

// SupervisedMission is a mission record with the internal fields the operator's
// supervision view adds (wire.md §7).
type SupervisedMission struct {
	MissionRecord
	// IssuerDID is the DID the publisher acted as; authority over the mission
	// follows it.
	IssuerDID string `json:"issuer_did"`
	// ClaimerDID is the claimer's agent_did; null until claimed.
	ClaimerDID *string `json:"claimer_did"`
	// SettledBy is the DID the settling token acted for; null until settled.
	SettledBy *string `json:"settled_by"`
	// LastEventID is the id of the newest event about the mission.
	LastEventID string `json:"last_event_id"`
	// EventIDs are the ids of every event about the mission, oldest first:
	// mission.created, mission.accepted, mission.completed, mission.settled and
	// its payment.settled, as far as it got.
	EventIDs []string `json:"event_ids"`
	// Version counts those events: 1 when created, 5 once settled and paid.
	Version int `json:"version"`
}

// Strings behind pointers are never written to, so records may share them; the
// payload, a slice, is copied.
func (m *mission) record() MissionRecord {
	return MissionRecord{
		MissionID: m.MissionID, Title: m.Title, Description: m.Description, State: m.state,
		Publisher: m.Publisher, PublisherKind: m.PublisherKind, Domain: m.Domain, SubnetID: m.SubnetID,
		ZoneID: m.ZoneID, RequiredRole: m.RequiredRole, RequiredFaction: m.RequiredFaction,
		Reward: m.Reward, Payload: slices.Clone(m.Payload), Claimer: m.claimer, Result: m.result,
		CreatedAt: m.createdAt, UpdatedAt: m.updatedAt,
		ClaimedAt: m.claimedAt, CompletedAt: m.completedAt, SettledAt: m.settledAt,
	}
}

func (m *mission) supervised() SupervisedMission {
	s := SupervisedMission{MissionRecord: m.record(), IssuerDID: m.IssuerDID,
		LastEventID: m.eventIDs[len(m.eventIDs)-1], EventIDs: slices.Clone(m.eventIDs), Version: len(m.eventIDs)}
	if m.claimerDID != "" {
		d := m.claimerDID
		s.ClaimerDID = &d
	}
	if m.settledBy != "" {
		d := m.settledBy
		s.SettledBy = &d
	}
	return s
}

func (m *mission) ref() events.MissionRef {
	r := events.MissionRef{
		MissionID: m.MissionID, State: m.state, Publisher: m.Publisher, PublisherKind: m.PublisherKind,
		IssuerDID: m.IssuerDID, SubnetID: m.SubnetID, RequiredRole: m.RequiredRole,
		RequiredFaction: m.RequiredFaction, Reward: m.Reward, ClaimerDID: m.claimerDID,
	}
	if m.claimer != nil {
		r.Claimer = *m.claimer
	}
	return r
}
