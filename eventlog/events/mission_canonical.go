package events

import (
	"strconv"

	"github.com/civnode/civnode/eventlog"
)

// AppendCanonical writes m in RFC 8785 form (eventlog.CanonicalAppender), which
// spares every mission create encoding/json and the JCS re-parse of its output.
// The keys are written in JCS order: all are ASCII, so that is byte order.
//
// Payload is written as it is: it must already be in RFC 8785 form, as the
// commands store it (they canonicalise it when they check it). An empty Payload
// reports false, and so does a string that is not valid UTF-8 or a reward beyond
// ±2^53, which JCS, writing numbers as IEEE doubles, would not keep: the slow
// path writes those as it always has.
func (m MissionCreated) AppendCanonical(dst []byte) ([]byte, bool) {
	if len(m.Payload) == 0 {
		return dst, false
	}
	r := m.Reward
	if !exactInJCS(r.AgentCredit) || !exactInJCS(r.Capacity) || !exactInJCS(r.Reputation) || !exactInJCS(r.TreasuryShareCredit) {
		return dst, false
	}
	// The key names, punctuation and four numbers take under 300 bytes.
	n := 300 + len(m.Description) + len(m.Domain) + len(m.IssuerDID) + len(m.MissionID) +
		len(m.Payload) + len(m.Publisher) + len(m.PublisherKind) + len(m.SubnetID) + len(m.Title)
	for _, p := range [...]*string{m.RequiredFaction, m.RequiredRole, m.ZoneID} {
		if p != nil {
			n += len(*p)
		}
	}
	if dst == nil {
		dst = make([]byte, 0, n)
	}
	ok := true
	str := func(key, s string) {
		dst = append(dst, key...)
		if ok {
			dst, ok = eventlog.AppendCanonicalString(dst, s)
		}
	}
	optional := func(key string, s *string) {
		if s == nil {
			dst = append(append(dst, key...), "null"...)
			return
		}
		str(key, *s)
	}
	str(`{"description":`, m.Description)
	str(`,"domain":`, m.Domain)
	str(`,"issuer_did":`, m.IssuerDID)
	str(`,"mission_id":`, m.MissionID)
	dst = append(dst, `,"payload":`...)
	dst = append(dst, m.Payload...)
	str(`,"publisher":`, m.Publisher)
	str(`,"publisher_kind":`, m.PublisherKind)
	optional(`,"required_faction":`, m.RequiredFaction)
	optional(`,"required_role":`, m.RequiredRole)
	dst = append(dst, `,"reward":{"agent_credit":`...)
	dst = strconv.AppendInt(dst, r.AgentCredit, 10)
	dst = append(dst, `,"capacity":`...)
	dst = strconv.AppendInt(dst, r.Capacity, 10)
	dst = append(dst, `,"reputation":`...)
	dst = strconv.AppendInt(dst, r.Reputation, 10)
	dst = append(dst, `,"treasury_share_credit":`...)
	dst = strconv.AppendInt(dst, r.TreasuryShareCredit, 10)
	dst = append(dst, '}')
	str(`,"subnet_id":`, m.SubnetID)
	str(`,"title":`, m.Title)
	optional(`,"zone_id":`, m.ZoneID)
	return append(dst, '}'), ok
}

// exactInJCS reports an integer that JCS, which writes every number as an IEEE
// double, writes as its own decimal digits: one of magnitude at most 2^53.
func exactInJCS(v int64) bool { return -1<<53 <= v && v <= 1<<53 }
