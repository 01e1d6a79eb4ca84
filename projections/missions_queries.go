package projections

import (
	"encoding/base64"
	"encoding/binary"
	"sort"
	"time"

	"github.com/civnode/civnode/eventlog/events"
)

// MissionRef returns what commands need to know of a mission
// (commands.MissionReader).
func (p *Missions) MissionRef(missionID string) (events.MissionRef, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m, ok := p.byID[missionID]
	if !ok {
		return events.MissionRef{}, false
	}
	return m.ref(), true
}

// Mission returns the record of missionID.
func (p *Missions) Mission(missionID string) (MissionRecord, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m, ok := p.byID[missionID]
	if !ok {
		return MissionRecord{}, false
	}
	return m.record(), true
}

// MissionFilter selects missions for List; an empty field selects every value.
// A mission matches when it matches every field given.
type MissionFilter struct {
	State        string
	SubnetID     string
	Domain       string
	RequiredRole string
	Publisher    string
}

func (f MissionFilter) matches(m *mission) bool {
	return (f.State == "" || m.state == f.State) &&
		(f.SubnetID == "" || m.SubnetID == f.SubnetID) &&
		(f.Domain == "" || m.Domain == f.Domain) &&
		(f.RequiredRole == "" || m.RequiredRole != nil && *m.RequiredRole == f.RequiredRole) &&
		(f.Publisher == "" || m.Publisher == f.Publisher)
}

// smallestIndex returns the smallest index a filter names, every mission's when
// it names none, and nil when a value it names has no mission at all.
func (p *Missions) smallestIndex(f MissionFilter) *missionIndex {
	best := &p.all
	for _, c := range []struct {
		value string
		index map[string]*missionIndex
	}{
		{f.State, p.byState}, {f.SubnetID, p.bySubnet}, {f.Domain, p.byDomain},
		{f.RequiredRole, p.byRole}, {f.Publisher, p.byPublisher},
	} {
		if c.value == "" {
			continue
		}
		x := c.index[c.value]
		if x == nil {
			return nil
		}
		if x.n < best.n {
			best = x
		}
	}
	return best
}

// A mission cursor is opaque to clients. Like the identities cursor it holds the
// creation seq of the last mission of its page, tagged 'm': missions are listed in
// creation order and a new mission has a higher seq than every existing one, so
// paging visits every mission exactly once, also while missions are added (a
// mission that changes state while a state-filtered list is paged may of course
// leave or join the list).
const missionCursorTag = 'm'

func encodeMissionCursor(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint64([]byte{missionCursorTag}, seq))
}

func decodeMissionCursor(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 9 || b[0] != missionCursorTag {
		return 0, ErrBadCursor
	}
	return binary.BigEndian.Uint64(b[1:]), nil
}

// page returns the missions matching f after cursor, at most limit, and the
// cursor of the next page ("" when no match follows). It walks only the smallest
// index f names, and stops at the first match beyond the page. The caller holds
// the read lock.
func (p *Missions) page(f MissionFilter, cursor string, limit int) ([]*mission, string, error) {
	after, err := decodeMissionCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	var out []*mission
	more := false
	p.smallestIndex(f).each(after, func(m *mission) bool {
		if !f.matches(m) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, m)
		return true
	})
	next := ""
	if more {
		next = encodeMissionCursor(out[len(out)-1].seq)
	}
	return out, next, nil
}

// List returns up to limit mission records matching f in creation order after
// cursor, and the cursor of the next page ("" at the end). A cursor that was not
// handed out is ErrBadCursor.
func (p *Missions) List(f MissionFilter, cursor string, limit int) ([]MissionRecord, string, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ms, next, err := p.page(f, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]MissionRecord, len(ms))
	for i, m := range ms {
		out[i] = m.record()
	}
	return out, next, nil
}

// Supervise is List with each mission's internal fields, for the operator.
func (p *Missions) Supervise(f MissionFilter, cursor string, limit int) ([]SupervisedMission, string, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ms, next, err := p.page(f, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]SupervisedMission, len(ms))
	for i, m := range ms {
		out[i] = m.supervised()
	}
	return out, next, nil
}

// Mine returns the newest limit missions agentDID claimed and the newest limit it
// published, each oldest first.
func (p *Missions) Mine(agentDID string, limit int) (claimed, published []MissionRecord) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return records(p.byClaimer[agentDID].newest(limit)), records(p.byIssuer[agentDID].newest(limit))
}

// Active returns the missions of agentDID that are not settled: those it claimed
// and has not been paid for yet, and those it published that are still open; the
// newest limit of them, oldest first.
func (p *Missions) Active(agentDID string, limit int) []MissionRecord {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return records(p.active[agentDID].newest(limit))
}

func records(ms []*mission) []MissionRecord {
	out := make([]MissionRecord, len(ms))
	for i, m := range ms {
		out[i] = m.record()
	}
	return out
}

// Count is the number of missions.
func (p *Missions) Count() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.all.n
}

// Balance returns what settled missions have paid agentDID. Only credit,
// reputation, capacity and missions_completed are kept here; the identities model
// folds the same payments into each identity's stats.
func (p *Missions) Balance(agentDID string) Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if b := p.balances[agentDID]; b != nil {
		return *b
	}
	return Stats{}
}

// Treasury returns the credits settlements have routed to subnetID's treasury.
func (p *Missions) Treasury(subnetID string) int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.treasuries[subnetID]
}

// Treasuries returns every subnet's treasury.
func (p *Missions) Treasuries() map[string]int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]int64, len(p.treasuries))
	for k, v := range p.treasuries {
		out[k] = v
	}
	return out
}

// Paid sums the settlements paid after since (exclusive): how many and what they
// paid. It is a binary search over running totals, whatever the window.
type Paid struct {
	Settlements int `json:"settlements"`
	events.Reward
}

// PaidSince returns what settlements with a payment timestamp after since paid.
func (p *Missions) PaidSince(since time.Time) Paid {
	p.mu.RLock()
	defer p.mu.RUnlock()
	micros := since.UnixMicro()
	i := sort.Search(len(p.settlements), func(i int) bool { return p.settlements[i].micros > micros })
	if i == len(p.settlements) {
		return Paid{}
	}
	last := p.settlements[len(p.settlements)-1]
	out := Paid{Settlements: last.count, Reward: last.total}
	if i > 0 {
		before := p.settlements[i-1]
		out.Settlements -= before.count
		out.AgentCredit -= before.total.AgentCredit
		out.Reputation -= before.total.Reputation
		out.Capacity -= before.total.Capacity
		out.TreasuryShareCredit -= before.total.TreasuryShareCredit
	}
	return out
}

// MissionMetrics aggregates the missions (GET /v1/civilization/metrics).
type MissionMetrics struct {
	Total   int            `json:"total"`
	ByState map[string]int `json:"by_state"`
	// Paid is what every settlement so far has paid.
	Paid Paid `json:"paid"`
	// Treasuries is each subnet's treasury.
	Treasuries map[string]int64 `json:"treasuries"`
}

// Metrics computes the aggregates from counters and index sizes: O(subnets).
func (p *Missions) Metrics() MissionMetrics {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m := MissionMetrics{Total: p.all.n, ByState: map[string]int{}, Treasuries: map[string]int64{},
		Paid: Paid{Settlements: len(p.settlements), Reward: p.paid}}
	for _, s := range []string{events.StateCreated, events.StateClaimed, events.StateCompleted, events.StateSettled} {
		m.ByState[s] = p.byState[s].len()
	}
	for k, v := range p.treasuries {
		m.Treasuries[k] = v
	}
	return m
}
