package projections

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// MissionRef returns what commands need to know of a mission
// (commands.MissionReader).
func (p *Missions) MissionRef(missionID string) (events.MissionRef, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return events.MissionRef{}, false, err
	}
	defer done()
	if p.latest {
		// A decision asks most often of an id it has just made, which is
		// absent: missionTaken's rule answers without a lookup. (A query reads
		// a snapshot, where m/h would cost a read of its own.)
		hi, _, err := r.Get(key(missionHighest))
		if err != nil {
			return events.MissionRef{}, false, storeErr(err)
		}
		if missionID > string(hi) {
			return events.MissionRef{}, false, nil
		}
	}
	m := &missionState{}
	ok, err := load(r, key(missionRecord, missionID), m)
	if !ok || err != nil {
		return events.MissionRef{}, false, err
	}
	return m.ref(), true, nil
}

// Mission returns the record of missionID.
func (p *Missions) Mission(missionID string) (MissionRecord, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return MissionRecord{}, false, err
	}
	defer done()
	m := &missionState{}
	ok, err := load(r, key(missionRecord, missionID), m)
	if !ok || err != nil {
		return MissionRecord{}, false, err
	}
	result, _, err := loadResult(r, m)
	if err != nil {
		return MissionRecord{}, false, err
	}
	return m.record(result), true, nil
}

// Written returns the record of the mission ev wrote, as the fold of ev left
// it: what GET /v1/core/missions/{mission_id} returned once ev was durable and
// before any later event about the mission. It is read from what the fold
// answered (eventlog.Event.Folded) on an event Append or Decide returned, so
// a write answers from its own decision: the store is read only for the result
// of a mission whose result an earlier event set (a settlement). ok is false
// when the missions model did not fold ev.
func (p *Missions) Written(ev *eventlog.Event) (MissionRecord, bool, error) {
	w, ok := ev.Folded().(*written)
	if !ok {
		return MissionRecord{}, false, nil
	}
	result := w.result
	if result == nil && w.m.CompletedAt != nil {
		v, err := view(p.src)
		if err != nil {
			return MissionRecord{}, false, err
		}
		defer v.Close()
		if result, _, err = loadResult(v, w.m); err != nil {
			return MissionRecord{}, false, err
		}
	}
	return w.m.record(result), true, nil
}

// loadResult reads m's result, nil until it is completed, and its size.
func loadResult(r reader, m *missionState) (*string, int, error) {
	if m.CompletedAt == nil {
		return nil, 0, nil
	}
	b, _, err := r.Get(key(missionResult, m.MissionID))
	if err != nil {
		return nil, 0, storeErr(err)
	}
	s := string(b)
	return &s, len(b), nil
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

func (f MissionFilter) matches(m *missionState) bool {
	return (f.State == "" || m.State == f.State) &&
		(f.SubnetID == "" || m.SubnetID == f.SubnetID) &&
		(f.Domain == "" || m.Domain == f.Domain) &&
		(f.RequiredRole == "" || m.RequiredRole != nil && *m.RequiredRole == f.RequiredRole) &&
		(f.Publisher == "" || m.Publisher == f.Publisher)
}

// smallestIndex returns the name and value of the smallest index a filter
// names, every mission's when it names none; ok is false when a value it names
// has no mission at all.
func smallestIndex(v reader, f MissionFilter) (name, value string, ok bool, err error) {
	best, err := counter(v, key(missionCount, indexAll, ""))
	if err != nil {
		return "", "", false, err
	}
	name = indexAll
	for _, c := range []struct{ index, value string }{
		{indexState, f.State}, {indexSubnet, f.SubnetID}, {indexDomain, f.Domain},
		{indexRole, f.RequiredRole}, {indexPublisher, f.Publisher},
	} {
		if c.value == "" {
			continue
		}
		n, err := counter(v, key(missionCount, c.index, c.value))
		if err != nil {
			return "", "", false, err
		}
		if n == 0 {
			return "", "", false, nil
		}
		if n < best {
			best, name, value = n, c.index, c.value
		}
	}
	return name, value, true, nil
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

// Page bounds one page of a list: at most Limit items (at least 1) and, once it
// holds one item, no more than Bytes of items as the API writes them (their
// JSON and the comma between two; encodedSize), 0: no byte bound. A page cut
// short by Bytes hands back a cursor like one cut by Limit.
type Page struct {
	Cursor string
	Limit  int
	Bytes  int
}

// pagedMission is one mission of a page, with its result.
type pagedMission struct {
	m      *missionState
	result *string
}

// page returns the missions matching f after pg.Cursor, and the cursor of the
// next page ("" when no match follows). It walks only the smallest index f
// names, and stops at the first match beyond the page.
// size is the size of a mission as the list writes it (encodedSize).
func (p *Missions) page(v *eventlog.ModelView, f MissionFilter, pg Page, size func(*missionState, *string) int) ([]pagedMission, string, error) {
	after, err := decodeMissionCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := max(pg.Limit, 1)
	name, value, ok, err := smallestIndex(v, f)
	if !ok || err != nil {
		return nil, "", err
	}
	prefix := append(key(missionIndex, name, value), 0)
	if after == math.MaxUint64 {
		return nil, "", nil // nothing follows the last possible seq
	}
	lower := seqKey(prefix, after+1)
	_, upper := under(prefix[:len(prefix)-1])
	var out []pagedMission
	used, more := 0, false
	err = v.Scan(lower, upper, false, func(_, id []byte) (bool, error) {
		m := &missionState{}
		found, err := load(v, key(missionRecord, string(id)), m)
		if err != nil {
			return false, err
		}
		if !found {
			return false, storeErr(fmt.Errorf("index names mission %s, which has no record", id))
		}
		if !f.matches(m) {
			return true, nil
		}
		if len(out) == limit {
			more = true
			return false, nil
		}
		result, _, err := loadResult(v, m)
		if err != nil {
			return false, err
		}
		n := 0
		if pg.Bytes > 0 {
			n = size(m, result)
		}
		if pg.Bytes > 0 && len(out) > 0 && used+n > pg.Bytes {
			more = true
			return false, nil
		}
		used += n
		out = append(out, pagedMission{m, result})
		return true, nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = encodeMissionCursor(out[len(out)-1].m.Seq)
	}
	return out, next, nil
}

// recordSize is the size of a mission's record as the API writes it.
func recordSize(m *missionState, result *string) int { return encodedSize(m.record(result)) }

// supervisedSize is the size of a mission's supervised record as written.
func supervisedSize(m *missionState, result *string) int { return encodedSize(m.supervised(result)) }

// List returns mission records matching f in creation order after pg.Cursor,
// and the cursor of the next page ("" at the end). A cursor that was not
// handed out is ErrBadCursor.
func (p *Missions) List(f MissionFilter, pg Page) ([]MissionRecord, string, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, "", err
	}
	defer v.Close()
	ms, next, err := p.page(v, f, pg, recordSize)
	if err != nil {
		return nil, "", err
	}
	out := make([]MissionRecord, len(ms))
	for i, m := range ms {
		out[i] = m.m.record(m.result)
	}
	return out, next, nil
}

// Supervise is List with each mission's internal fields, for the operator.
func (p *Missions) Supervise(f MissionFilter, pg Page) ([]SupervisedMission, string, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, "", err
	}
	defer v.Close()
	ms, next, err := p.page(v, f, pg, supervisedSize)
	if err != nil {
		return nil, "", err
	}
	out := make([]SupervisedMission, len(ms))
	for i, m := range ms {
		out[i] = m.m.supervised(m.result)
	}
	return out, next, nil
}

// newest returns the newest missions of index name under value, at most limit
// and, past the first, at most budget bytes of records as written (encodedSize;
// 0: no bound), oldest first.
func newest(v *eventlog.ModelView, name, value string, limit, budget int) (out []MissionRecord, cut bool, err error) {
	if limit <= 0 {
		return []MissionRecord{}, false, nil
	}
	lower, upper := under(key(missionIndex, name, value))
	size := 0
	err = v.Scan(lower, upper, true, func(_, id []byte) (bool, error) {
		m := &missionState{}
		found, err := load(v, key(missionRecord, string(id)), m)
		if err != nil || !found {
			return false, err
		}
		result, _, err := loadResult(v, m)
		if err != nil {
			return false, err
		}
		rec := m.record(result)
		n := 0
		if budget > 0 {
			n = encodedSize(rec)
		}
		if budget > 0 && len(out) > 0 && size+n > budget {
			cut = true
			return false, nil
		}
		size += n
		out = append(out, rec)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, false, err
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	if out == nil {
		out = []MissionRecord{}
	}
	return out, cut, nil
}

// Mine returns the newest limit missions agentDID claimed and the newest limit it
// published, each oldest first, each list bounded by budget bytes as a Page is;
// cut reports that the budget left out some of the newest limit.
func (p *Missions) Mine(agentDID string, limit, budget int) (claimed, published []MissionRecord, cut bool, err error) {
	v, err := view(p.src)
	if err != nil {
		return nil, nil, false, err
	}
	defer v.Close()
	claimed, cut1, err := newest(v, indexClaimer, agentDID, limit, budget)
	if err != nil {
		return nil, nil, false, err
	}
	published, cut2, err := newest(v, indexIssuer, agentDID, limit, budget)
	return claimed, published, cut1 || cut2, err
}

// Active returns the missions of agentDID that are not settled: those it claimed
// and has not been paid for yet, and those it published that are still open; the
// newest limit of them, oldest first, bounded by budget bytes as a Page is.
func (p *Missions) Active(agentDID string, limit, budget int) ([]MissionRecord, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	out, _, err := newest(v, indexActive, agentDID, limit, budget)
	return out, err
}

// Count is the number of missions.
func (p *Missions) Count() (int, error) {
	r, done, err := p.reader()
	if err != nil {
		return 0, err
	}
	defer done()
	n, err := counter(r, key(missionCount, indexAll, ""))
	return int(n), err
}

// Balance returns what settled missions have paid agentDID. Only credit,
// reputation, capacity and missions_completed are kept here; the identities model
// folds the same payments into each identity's stats.
func (p *Missions) Balance(agentDID string) (Stats, error) {
	r, done, err := p.reader()
	if err != nil {
		return Stats{}, err
	}
	defer done()
	var b Stats
	_, err = load(r, key(missionBalance, agentDID), &b)
	return b, err
}

// PaidTotal returns what every settlement so far has paid, summed
// (commands.MissionReader). Every balance and treasury is a part of it, so the
// mission commands bound it, read through Decisions, to keep all of them exact
// in JSON (commands.MaxBalance).
func (p *Missions) PaidTotal() (events.Reward, error) {
	r, done, err := p.reader()
	if err != nil {
		return events.Reward{}, err
	}
	defer done()
	t, err := lastSettlement(r)
	return t.Reward, err
}

// Treasury returns the credits settlements have routed to subnetID's treasury.
func (p *Missions) Treasury(subnetID string) (int64, error) {
	r, done, err := p.reader()
	if err != nil {
		return 0, err
	}
	defer done()
	return counter(r, key(missionTreasury, subnetID))
}

// Treasuries returns every subnet's treasury.
func (p *Missions) Treasuries() (map[string]int64, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	return treasuries(v)
}

func treasuries(v *eventlog.ModelView) (map[string]int64, error) {
	out := map[string]int64{}
	lo, hi := under(key(missionTreasury))
	err := v.Scan(lo, hi, false, func(k, val []byte) (bool, error) {
		if len(val) == 8 {
			out[string(k[len(lo):])] = int64(binary.BigEndian.Uint64(val))
		}
		return true, nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

// Paid sums the settlements paid after since (exclusive): how many and what they
// paid. It is two seeks over running totals, whatever the window.
type Paid struct {
	Settlements int `json:"settlements"`
	events.Reward
}

// PaidSince returns what settlements with a payment timestamp after since paid.
func (p *Missions) PaidSince(since time.Time) (Paid, error) {
	v, err := view(p.src)
	if err != nil {
		return Paid{}, err
	}
	defer v.Close()
	last, err := lastSettlement(v)
	if err != nil || last.Count == 0 {
		return Paid{}, err
	}
	// The running totals of the newest settlement at or before since.
	var before settlementTotals
	if micros := since.UnixMicro(); micros >= 0 {
		lo := append(key(missionSettle), 0)
		err = v.Scan(lo, settlementKey(micros+1), true, func(_, val []byte) (bool, error) {
			if err := json.Unmarshal(val, &before); err != nil {
				return false, storeErr(err)
			}
			return false, nil
		})
		if err != nil {
			return Paid{}, err
		}
	}
	out := Paid{Settlements: last.Count - before.Count, Reward: last.Reward}
	out.AgentCredit -= before.AgentCredit
	out.Reputation -= before.Reputation
	out.Capacity -= before.Capacity
	out.TreasuryShareCredit -= before.TreasuryShareCredit
	return out, nil
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

// Metrics reads the aggregates from counters: O(subnets).
func (p *Missions) Metrics() (MissionMetrics, error) {
	v, err := view(p.src)
	if err != nil {
		return MissionMetrics{}, err
	}
	defer v.Close()
	total, err := counter(v, key(missionCount, indexAll, ""))
	if err != nil {
		return MissionMetrics{}, err
	}
	last, err := lastSettlement(v)
	if err != nil {
		return MissionMetrics{}, err
	}
	m := MissionMetrics{Total: int(total), ByState: map[string]int{},
		Paid: Paid{Settlements: last.Count, Reward: last.Reward}}
	for _, s := range []string{events.StateCreated, events.StateClaimed, events.StateCompleted, events.StateSettled} {
		n, err := counter(v, key(missionCount, indexState, s))
		if err != nil {
			return MissionMetrics{}, err
		}
		m.ByState[s] = int(n)
	}
	if m.Treasuries, err = treasuries(v); err != nil {
		return MissionMetrics{}, err
	}
	return m, nil
}
