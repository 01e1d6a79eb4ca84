package projections

import (
	"encoding/json"

	"github.com/civnode/civnode/eventlog/events"
)

// MissionRecord is a mission as the API shows it (docs/api.md,
// "Missions"): the record's fields in the documented order, then the timestamps. zone_id, required_role,
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
// supervision view adds (docs/api.md).
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

// missionState is a mission as the model stores it (key m/r): the payload of
// mission.created, what later events changed, and the ids of every event about
// it. The result, up to 256 KiB, is kept apart (m/t), so the steps after
// completion rewrite a record of a few hundred bytes, not the result.
type missionState struct {
	Seq uint64 `json:"seq"` // of mission.created: the creation order
	events.MissionCreated
	State       string   `json:"state"`
	Claimer     *string  `json:"claimer"`
	ClaimerDID  string   `json:"claimer_did,omitempty"`
	SettledBy   string   `json:"settled_by,omitempty"`
	Paid        bool     `json:"paid,omitempty"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	ClaimedAt   *string  `json:"claimed_at"`
	CompletedAt *string  `json:"completed_at"`
	SettledAt   *string  `json:"settled_at"`
	EventIDs    []string `json:"event_ids"`
}

func (m *missionState) record(result *string) MissionRecord {
	return MissionRecord{
		MissionID: m.MissionID, Title: m.Title, Description: m.Description, State: m.State,
		Publisher: m.Publisher, PublisherKind: m.PublisherKind, Domain: m.Domain, SubnetID: m.SubnetID,
		ZoneID: m.ZoneID, RequiredRole: m.RequiredRole, RequiredFaction: m.RequiredFaction,
		Reward: m.Reward, Payload: m.Payload, Claimer: m.Claimer, Result: result,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
		ClaimedAt: m.ClaimedAt, CompletedAt: m.CompletedAt, SettledAt: m.SettledAt,
	}
}

func (m *missionState) supervised(result *string) SupervisedMission {
	s := SupervisedMission{MissionRecord: m.record(result), IssuerDID: m.IssuerDID,
		LastEventID: m.EventIDs[len(m.EventIDs)-1], EventIDs: m.EventIDs, Version: len(m.EventIDs)}
	if m.ClaimerDID != "" {
		d := m.ClaimerDID
		s.ClaimerDID = &d
	}
	if m.SettledBy != "" {
		d := m.SettledBy
		s.SettledBy = &d
	}
	return s
}

func (m *missionState) ref() events.MissionRef {
	r := events.MissionRef{
		MissionID: m.MissionID, State: m.State, Publisher: m.Publisher, PublisherKind: m.PublisherKind,
		IssuerDID: m.IssuerDID, SubnetID: m.SubnetID, RequiredRole: m.RequiredRole,
		RequiredFaction: m.RequiredFaction, Reward: m.Reward, ClaimerDID: m.ClaimerDID,
	}
	if m.Claimer != nil {
		r.Claimer = *m.Claimer
	}
	return r
}
