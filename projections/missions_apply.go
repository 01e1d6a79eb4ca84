package projections

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// foldMission folds one event into the missions model. A mission event whose
// payload is malformed or that the state machine forbids (a claim of a mission
// that is not created, a second payment) is refused: the caller rolls back
// whatever the handler wrote and counts it.
func foldMission(w writer, ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeMissionCreated:
		return applyCreated(w, ev)
	case events.TypeMissionAccepted:
		return applyAccepted(w, ev)
	case events.TypeMissionCompleted:
		return applyCompleted(w, ev)
	case events.TypeMissionSettled:
		return applySettled(w, ev)
	case events.TypePaymentSettled:
		return applyMissionPayment(w, ev)
	default:
		return errNotOurs
	}
}

// missionTaken reports whether a mission has id. An id above the greatest
// mission id ever created (m/h) has none, and that is known without a lookup:
// the node's ids are UUIDv7s, which grow with the clock, so a new one nearly
// always sorts after every id before it, and a lookup of a key that is absent
// is the costliest read the store has (every level that could hold it is
// asked). The rule holds for any id whatever its source, since every mission
// record was written by applyCreated, which raised m/h, and none is deleted;
// an id at or below m/h (a clock set back) is looked up.
func missionTaken(r reader, id string) (bool, error) {
	hi, _, err := r.Get(key(missionHighest))
	if err != nil {
		return false, storeErr(err)
	}
	if id > string(hi) {
		return false, nil
	}
	_, ok, err := r.Get(key(missionRecord, id))
	if err != nil {
		return false, storeErr(err)
	}
	return ok, nil
}

// missionIn loads the mission id names if it is in state.
func missionIn(r reader, id, state string) (*missionState, error) {
	m := &missionState{}
	ok, err := load(r, key(missionRecord, id), m)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("unknown mission %q", id)
	}
	if m.State != state {
		return nil, fmt.Errorf("mission %s is %s, not %s", id, m.State, state)
	}
	return m, nil
}

// indexKey is the entry of mission seq in index name under value.
func indexKey(name, value string, seq uint64) []byte {
	return seqKey(append(key(missionIndex, name, value), 0), seq)
}

// index adds m to index name under value; remove takes it out.
func index(w writer, name, value string, m *missionState) error {
	w.SetIndex(indexKey(name, value, m.Seq), []byte(m.MissionID))
	if counted[name] {
		return add(w, key(missionCount, name, value), 1)
	}
	return nil
}

func unindex(w writer, name, value string, m *missionState) error {
	w.Delete(indexKey(name, value, m.Seq))
	if counted[name] {
		return add(w, key(missionCount, name, value), -1)
	}
	return nil
}

// indexAllOf adds m to each index in turn, stopping at the first store error.
func indexAllOf(w writer, m *missionState, entries ...[2]string) error {
	for _, e := range entries {
		if err := index(w, e[0], e[1], m); err != nil {
			return err
		}
	}
	return nil
}

// saveMission stores m and answers the event's writer with the record it
// leaves (Missions.Written). result is the mission's result when the event
// sets it; after that it is in the store alone (m/t).
func saveMission(w writer, m *missionState, result *string) error {
	if err := store(w, key(missionRecord, m.MissionID), m); err != nil {
		return err
	}
	w.Answer(&written{m: m, result: result})
	return nil
}

// written is what a mission fold answers (eventlog.ModelTxn.Answer): the
// mission as the event left it, and its result if the event set it.
type written struct {
	m      *missionState
	result *string
}

// createdMission is the mission the event ev, whose payload is pl, creates:
// a function of the event alone, which the state map relies on
// (statemap_changes.go).
func createdMission(ev *eventlog.Event, pl events.MissionCreated) *missionState {
	return &missionState{Seq: ev.Seq, MissionCreated: pl, State: events.StateCreated,
		CreatedAt: ev.Timestamp, UpdatedAt: ev.Timestamp, EventIDs: []string{ev.ID}}
}

func applyCreated(w writer, ev *eventlog.Event) error {
	pl, err := payloadOf[events.MissionCreated](ev)
	if err != nil {
		return err
	}
	if pl.MissionID == "" {
		return errors.New("no mission_id")
	}
	if taken, err := missionTaken(w, pl.MissionID); err != nil {
		return err
	} else if taken {
		return fmt.Errorf("mission %s exists", pl.MissionID)
	}
	if len(pl.Payload) == 0 || pl.Payload[0] != '{' {
		return errors.New("payload is not an object")
	}
	if r := pl.Reward; r.AgentCredit < 0 || r.Reputation < 0 || r.Capacity < 0 || r.TreasuryShareCredit < 0 {
		return errors.New("negative reward")
	}
	m := createdMission(ev, pl)
	entries := [][2]string{{indexAll, ""}, {indexState, m.State}, {indexSubnet, m.SubnetID},
		{indexDomain, m.Domain}, {indexPublisher, m.Publisher}, {indexIssuer, m.IssuerDID}, {indexActive, m.IssuerDID}}
	if m.RequiredRole != nil {
		entries = append(entries, [2]string{indexRole, *m.RequiredRole})
	}
	if err := indexAllOf(w, m, entries...); err != nil {
		return err
	}
	if hi, _, err := w.Get(key(missionHighest)); err != nil {
		return storeErr(err)
	} else if m.MissionID > string(hi) {
		w.Set(key(missionHighest), []byte(m.MissionID))
	}
	return saveMission(w, m, nil)
}

// move changes m's state and its state index, and records ev about it.
func move(w writer, m *missionState, state string, ev *eventlog.Event) error {
	if err := unindex(w, indexState, m.State, m); err != nil {
		return err
	}
	m.State = state
	m.UpdatedAt = ev.Timestamp
	m.EventIDs = append(m.EventIDs, ev.ID)
	return index(w, indexState, state, m)
}

func applyAccepted(w writer, ev *eventlog.Event) error {
	var pl events.MissionAccepted
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	m, err := missionIn(w, pl.MissionID, events.StateCreated)
	if err != nil {
		return err
	}
	if pl.Claimer == "" || pl.ClaimerDID == "" {
		return errors.New("no claimer")
	}
	claimer, at := pl.Claimer, ev.Timestamp
	m.Claimer, m.ClaimerDID, m.ClaimedAt = &claimer, pl.ClaimerDID, &at
	if err := move(w, m, events.StateClaimed, ev); err != nil {
		return err
	}
	if err := indexAllOf(w, m, [2]string{indexClaimer, m.ClaimerDID}, [2]string{indexActive, m.ClaimerDID}); err != nil {
		return err
	}
	return saveMission(w, m, nil)
}

func applyCompleted(w writer, ev *eventlog.Event) error {
	var pl events.MissionCompleted
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	m, err := missionIn(w, pl.MissionID, events.StateClaimed)
	if err != nil {
		return err
	}
	at := ev.Timestamp
	m.CompletedAt = &at
	if err := move(w, m, events.StateCompleted, ev); err != nil {
		return err
	}
	w.Set(key(missionResult, m.MissionID), []byte(pl.Result))
	result := pl.Result
	return saveMission(w, m, &result)
}

func applySettled(w writer, ev *eventlog.Event) error {
	var pl events.MissionSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	m, err := missionIn(w, pl.MissionID, events.StateCompleted)
	if err != nil {
		return err
	}
	at := ev.Timestamp
	m.SettledAt, m.SettledBy = &at, pl.SettledBy
	if err := move(w, m, events.StateSettled, ev); err != nil {
		return err
	}
	if err := unindex(w, indexActive, m.IssuerDID, m); err != nil {
		return err
	}
	if err := unindex(w, indexActive, m.ClaimerDID, m); err != nil {
		return err
	}
	return saveMission(w, m, nil)
}

// settlementTotals is what every settlement up to one paid (key m/s).
type settlementTotals struct {
	Count int `json:"count"`
	events.Reward
}

// applyMissionPayment credits the settlement of a mission: the agent's balance
// and the subnet's treasury. Each settled mission is paid exactly once.
func applyMissionPayment(w writer, ev *eventlog.Event) error {
	var pl events.PaymentSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.MissionID == "" {
		return errNotOurs
	}
	m, err := missionIn(w, pl.MissionID, events.StateSettled)
	if err != nil {
		return err
	}
	switch {
	case m.Paid:
		return fmt.Errorf("mission %s is paid already", m.MissionID)
	case pl.ToDID != m.ClaimerDID || pl.Treasury != m.SubnetID:
		return fmt.Errorf("payment of mission %s goes to %s and %s, not its claimer and subnet", m.MissionID, pl.ToDID, pl.Treasury)
	case pl.AgentCredit != m.Reward.AgentCredit || pl.Reputation != m.Reward.Reputation ||
		pl.Capacity != m.Reward.Capacity || pl.TreasuryShareCredit != m.Reward.TreasuryShareCredit:
		return fmt.Errorf("payment of mission %s differs from its reward", m.MissionID)
	}
	m.Paid = true
	m.EventIDs = append(m.EventIDs, ev.ID)
	if err := saveMission(w, m, nil); err != nil {
		return err
	}
	var b Stats
	if _, err := load(w, key(missionBalance, pl.ToDID), &b); err != nil {
		return err
	}
	b.Credit += pl.AgentCredit
	b.Reputation += pl.Reputation
	b.Capacity += pl.Capacity
	b.MissionsCompleted++
	if err := store(w, key(missionBalance, pl.ToDID), b); err != nil {
		return err
	}
	// A treasury is kept even at 0: a subnet that settled a mission shows in
	// Treasuries.
	tk := key(missionTreasury, pl.Treasury)
	n, err := counter(w, tk)
	if err != nil {
		return err
	}
	w.Set(tk, binary.BigEndian.AppendUint64(nil, uint64(n+pl.TreasuryShareCredit)))
	t, err := lastSettlement(w)
	if err != nil {
		return err
	}
	t.Count++
	t.AgentCredit += pl.AgentCredit
	t.Reputation += pl.Reputation
	t.Capacity += pl.Capacity
	t.TreasuryShareCredit += pl.TreasuryShareCredit
	if err := store(w, settlementKey(ev.Time().UnixMicro()), t); err != nil {
		return err
	}
	return store(w, key(missionPaid), t)
}

func settlementKey(micros int64) []byte {
	return seqKey(append(key(missionSettle), 0), uint64(micros))
}

// lastSettlement reads the running totals of the newest settlement (key m/p,
// kept so that a fold needs no scan).
func lastSettlement(r reader) (settlementTotals, error) {
	var t settlementTotals
	_, err := load(r, key(missionPaid), &t)
	return t, err
}
