package projections

import (
	"encoding/json"
	"strconv"

	"github.com/civnode/civnode/eventlog"
)

// The state map's values are the JCS forms of records (statemap.go). Encoding
// a record with encoding/json and then parsing and sorting it again with the
// log's JCS encoder costs more than reading the record; the appenders below
// write the JCS form directly, members in RFC 8785 order (the names are ASCII,
// so byte order), each string as the log's encoder writes it
// (eventlog.AppendCanonicalString). What they cannot write exactly, they
// refuse, and the value then takes the slow path: a string that is not valid
// UTF-8, an integer beyond 2^53 - 1, a mission payload that is not an object.
// A fuzz test holds them to the slow path (statemap_jcs_test.go).

// stateJCSAppender is a record that appends its own JCS form.
type stateJCSAppender interface {
	appendJCS(j *jcsWriter)
}

// jcsWriter appends JCS members; ok turns false at the first value it cannot
// write exactly, after which what it holds is to be discarded.
type jcsWriter struct {
	b  []byte
	ok bool
}

// key appends a member name, after a comma unless first.
func (j *jcsWriter) key(name string, first bool) {
	if !first {
		j.b = append(j.b, ',')
	}
	j.b = append(j.b, '"')
	j.b = append(j.b, name...)
	j.b = append(j.b, '"', ':')
}

func (j *jcsWriter) str(s string) {
	var ok bool
	if j.b, ok = eventlog.AppendCanonicalString(j.b, s); !ok {
		j.ok = false
	}
}

func (j *jcsWriter) nullable(s *string) {
	if s == nil {
		j.b = append(j.b, "null"...)
		return
	}
	j.str(*s)
}

func (j *jcsWriter) int(n int64) {
	if n > maxExactInteger || n < -maxExactInteger {
		j.ok = false
		return
	}
	j.b = strconv.AppendInt(j.b, n, 10)
}

func (j *jcsWriter) bool(v bool) {
	if v {
		j.b = append(j.b, "true"...)
		return
	}
	j.b = append(j.b, "false"...)
}

// strs appends a list of strings; nil is null, as encoding/json writes it.
func (j *jcsWriter) strs(ss []string) {
	if ss == nil {
		j.b = append(j.b, "null"...)
		return
	}
	j.b = append(j.b, '[')
	for i, s := range ss {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.str(s)
	}
	j.b = append(j.b, ']')
}

// object appends a JSON object given as JSON text, in its JCS form.
func (j *jcsWriter) object(raw json.RawMessage) {
	if string(raw) == "{}" {
		j.b = append(j.b, "{}"...)
		return
	}
	c, err := eventlog.CanonicalObject(raw)
	if err != nil {
		j.ok = false
		return
	}
	j.b = append(j.b, c...)
}

func (r *MissionRecord) appendJCS(j *jcsWriter) {
	j.b = append(j.b, '{')
	j.key("claimed_at", true)
	j.nullable(r.ClaimedAt)
	j.key("claimer", false)
	j.nullable(r.Claimer)
	j.key("completed_at", false)
	j.nullable(r.CompletedAt)
	j.key("created_at", false)
	j.str(r.CreatedAt)
	j.key("description", false)
	j.str(r.Description)
	j.key("domain", false)
	j.str(r.Domain)
	j.key("mission_id", false)
	j.str(r.MissionID)
	j.key("payload", false)
	j.object(r.Payload)
	j.key("publisher", false)
	j.str(r.Publisher)
	j.key("publisher_kind", false)
	j.str(r.PublisherKind)
	j.key("required_faction", false)
	j.nullable(r.RequiredFaction)
	j.key("required_role", false)
	j.nullable(r.RequiredRole)
	j.key("result", false)
	j.nullable(r.Result)
	j.key("reward", false)
	j.b = append(j.b, '{')
	j.key("agent_credit", true)
	j.int(r.Reward.AgentCredit)
	j.key("capacity", false)
	j.int(r.Reward.Capacity)
	j.key("reputation", false)
	j.int(r.Reward.Reputation)
	j.key("treasury_share_credit", false)
	j.int(r.Reward.TreasuryShareCredit)
	j.b = append(j.b, '}')
	j.key("settled_at", false)
	j.nullable(r.SettledAt)
	j.key("state", false)
	j.str(r.State)
	j.key("subnet_id", false)
	j.str(r.SubnetID)
	j.key("title", false)
	j.str(r.Title)
	j.key("updated_at", false)
	j.str(r.UpdatedAt)
	j.key("zone_id", false)
	j.nullable(r.ZoneID)
	j.b = append(j.b, '}')
}

func (r *IdentityRecord) appendJCS(j *jcsWriter) {
	j.b = append(j.b, '{')
	j.key("agent_did", true)
	j.str(r.AgentDID)
	j.key("capabilities_granted", false)
	j.strs(r.CapabilitiesGranted)
	j.key("controller_binding", false)
	if r.ControllerBinding == nil {
		j.b = append(j.b, "null"...)
	} else {
		r.ControllerBinding.appendJCS(j)
	}
	j.key("controller_id", false)
	j.nullable(r.ControllerID)
	j.key("created_at", false)
	j.str(r.CreatedAt)
	j.key("display_name", false)
	j.str(r.DisplayName)
	j.key("model_provider", false)
	j.nullable(r.ModelProvider)
	j.key("public_id", false)
	j.str(r.PublicID)
	j.key("stats", false)
	j.b = append(j.b, '{')
	j.key("capacity", true)
	j.int(r.Stats.Capacity)
	j.key("credit", false)
	j.int(r.Stats.Credit)
	j.key("missions_completed", false)
	j.int(r.Stats.MissionsCompleted)
	j.key("reputation", false)
	j.int(r.Stats.Reputation)
	j.b = append(j.b, '}')
	j.key("subnet_memberships", false)
	j.strs(r.SubnetMemberships)
	j.key("updated_at", false)
	j.str(r.UpdatedAt)
	j.key("wallet_adapter", false)
	j.nullable(r.WalletAdapter)
	j.b = append(j.b, '}')
}

func (r *BindingRecord) appendJCS(j *jcsWriter) {
	j.b = append(j.b, '{')
	j.key("active", true)
	j.bool(r.Active)
	j.key("agent_did", false)
	j.str(r.AgentDID)
	j.key("controller_kind", false)
	j.str(r.ControllerKind)
	j.key("controller_ref", false)
	j.str(r.ControllerRef)
	j.key("created_at", false)
	j.str(r.CreatedAt)
	j.key("node_id", false)
	j.nullable(r.NodeID)
	j.key("ownership_scope", false)
	j.str(r.OwnershipScope)
	j.key("updated_at", false)
	j.str(r.UpdatedAt)
	j.b = append(j.b, '}')
}

func (r *ProfileRecord) appendJCS(j *jcsWriter) {
	j.b = append(j.b, '{')
	j.key("agent_did", true)
	j.str(r.AgentDID)
	j.key("faction", false)
	j.nullable(r.Faction)
	j.key("home_subnet_id", false)
	j.nullable(r.HomeSubnetID)
	j.key("home_zone_id", false)
	j.nullable(r.HomeZoneID)
	j.key("role", false)
	j.nullable(r.Role)
	j.key("strategy", false)
	j.nullable(r.Strategy)
	j.key("updated_at", false)
	j.str(r.UpdatedAt)
	j.b = append(j.b, '}')
}
