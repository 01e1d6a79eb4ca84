package projections

import (
	"strconv"

	"github.com/civnode/civnode/eventlog/events"
)

// The JSON of the mission types, written by hand (jsonappend.go): field by
// field in declaration order, with the names and omitempty rules of their
// struct tags, which these methods must follow when a field changes. The fuzz
// tests compare them with encoding/json.

// appendReward appends r as encoding/json writes events.Reward.
func appendReward(dst []byte, r events.Reward) []byte {
	dst = appendInt(append(dst, `{"agent_credit":`...), r.AgentCredit)
	dst = appendInt(append(dst, `,"reputation":`...), r.Reputation)
	dst = appendInt(append(dst, `,"capacity":`...), r.Capacity)
	dst = appendInt(append(dst, `,"treasury_share_credit":`...), r.TreasuryShareCredit)
	return append(dst, '}')
}

// AppendJSON appends the stored form of m (encode), exactly as encoding/json
// writes it; ok is false, with dst unchanged in length, when the payload is
// not valid JSON.
func (m *missionState) AppendJSON(dst []byte) ([]byte, bool) {
	n := len(dst)
	dst = strconv.AppendUint(append(dst, `{"seq":`...), m.Seq, 10)
	dst = appendString(appendKey(dst, "mission_id", false), m.MissionID)
	dst = appendString(appendKey(dst, "title", false), m.Title)
	dst = appendString(appendKey(dst, "description", false), m.Description)
	dst = appendString(appendKey(dst, "publisher", false), m.Publisher)
	dst = appendString(appendKey(dst, "publisher_kind", false), m.PublisherKind)
	dst = appendString(appendKey(dst, "issuer_did", false), m.IssuerDID)
	dst = appendString(appendKey(dst, "domain", false), m.Domain)
	dst = appendString(appendKey(dst, "subnet_id", false), m.SubnetID)
	dst = appendNullableString(appendKey(dst, "zone_id", false), m.ZoneID)
	dst = appendNullableString(appendKey(dst, "required_role", false), m.RequiredRole)
	dst = appendNullableString(appendKey(dst, "required_faction", false), m.RequiredFaction)
	dst = appendReward(appendKey(dst, "reward", false), m.Reward)
	dst, ok := appendRaw(appendKey(dst, "payload", false), m.Payload)
	if !ok {
		return dst[:n], false
	}
	dst = appendString(appendKey(dst, "state", false), m.State)
	dst = appendNullableString(appendKey(dst, "claimer", false), m.Claimer)
	if m.ClaimerDID != "" {
		dst = appendString(appendKey(dst, "claimer_did", false), m.ClaimerDID)
	}
	if m.SettledBy != "" {
		dst = appendString(appendKey(dst, "settled_by", false), m.SettledBy)
	}
	if m.Paid {
		dst = append(appendKey(dst, "paid", false), "true"...)
	}
	dst = appendString(appendKey(dst, "created_at", false), m.CreatedAt)
	dst = appendString(appendKey(dst, "updated_at", false), m.UpdatedAt)
	dst = appendNullableString(appendKey(dst, "claimed_at", false), m.ClaimedAt)
	dst = appendNullableString(appendKey(dst, "completed_at", false), m.CompletedAt)
	dst = appendNullableString(appendKey(dst, "settled_at", false), m.SettledAt)
	dst = appendStrings(appendKey(dst, "event_ids", false), m.EventIDs)
	return append(dst, '}'), true
}

// AppendJSON appends r as the API writes it, exactly as encoding/json does;
// ok is false, with dst unchanged in length, when the payload is not valid
// JSON.
func (r MissionRecord) AppendJSON(dst []byte) ([]byte, bool) {
	n := len(dst)
	dst, ok := r.appendMembers(append(dst, '{'))
	if !ok {
		return dst[:n], false
	}
	return append(dst, '}'), true
}

// appendMembers appends r's members without the braces, for MissionRecord and
// SupervisedMission, which embeds it.
func (r *MissionRecord) appendMembers(dst []byte) ([]byte, bool) {
	dst = appendString(appendKey(dst, "mission_id", true), r.MissionID)
	dst = appendString(appendKey(dst, "title", false), r.Title)
	dst = appendString(appendKey(dst, "description", false), r.Description)
	dst = appendString(appendKey(dst, "state", false), r.State)
	dst = appendString(appendKey(dst, "publisher", false), r.Publisher)
	dst = appendString(appendKey(dst, "publisher_kind", false), r.PublisherKind)
	dst = appendString(appendKey(dst, "domain", false), r.Domain)
	dst = appendString(appendKey(dst, "subnet_id", false), r.SubnetID)
	dst = appendNullableString(appendKey(dst, "zone_id", false), r.ZoneID)
	dst = appendNullableString(appendKey(dst, "required_role", false), r.RequiredRole)
	dst = appendNullableString(appendKey(dst, "required_faction", false), r.RequiredFaction)
	dst = appendReward(appendKey(dst, "reward", false), r.Reward)
	dst, ok := appendRaw(appendKey(dst, "payload", false), r.Payload)
	if !ok {
		return dst, false
	}
	dst = appendNullableString(appendKey(dst, "claimer", false), r.Claimer)
	dst = appendNullableString(appendKey(dst, "result", false), r.Result)
	dst = appendString(appendKey(dst, "created_at", false), r.CreatedAt)
	dst = appendString(appendKey(dst, "updated_at", false), r.UpdatedAt)
	dst = appendNullableString(appendKey(dst, "claimed_at", false), r.ClaimedAt)
	dst = appendNullableString(appendKey(dst, "completed_at", false), r.CompletedAt)
	dst = appendNullableString(appendKey(dst, "settled_at", false), r.SettledAt)
	return dst, true
}

// AppendJSON appends s as the supervision view writes it, exactly as
// encoding/json does: the record's members, then the internal ones. It must
// exist: without it, MissionRecord's, promoted, would write the record alone.
func (s SupervisedMission) AppendJSON(dst []byte) ([]byte, bool) {
	n := len(dst)
	dst, ok := s.appendMembers(append(dst, '{'))
	if !ok {
		return dst[:n], false
	}
	dst = appendString(appendKey(dst, "issuer_did", false), s.IssuerDID)
	dst = appendNullableString(appendKey(dst, "claimer_did", false), s.ClaimerDID)
	dst = appendNullableString(appendKey(dst, "settled_by", false), s.SettledBy)
	dst = appendString(appendKey(dst, "last_event_id", false), s.LastEventID)
	dst = appendStrings(appendKey(dst, "event_ids", false), s.EventIDs)
	dst = appendInt(appendKey(dst, "version", false), int64(s.Version))
	return append(dst, '}'), true
}
