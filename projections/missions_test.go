package projections_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// missionChain is an in-memory log whose missions read model follows commits.
type missionChain struct {
	*chain
	missions *projections.Missions
}

func newMissionChain(t *testing.T) *missionChain {
	t.Helper()
	c := &missionChain{chain: newChain(t), missions: projections.NewMissions()}
	if err := projections.Rebuild(t.Context(), c.log, c.missions); err != nil {
		t.Fatal(err)
	}
	return c
}

// sync folds the chain into the missions model (the chain helper feeds only the
// identities model from OnCommit).
func (c *missionChain) sync() {
	c.t.Helper()
	if err := c.log.Scan(c.missions.Seq()+1, c.log.Tip().Seq, func(ev *eventlog.Event) error {
		c.missions.Apply(*ev)
		return nil
	}); err != nil {
		c.t.Fatal(err)
	}
}

func missionID(i int) string { return fmt.Sprintf("019b0000-0000-7000-8000-%012d", i) }

var testReward = events.Reward{AgentCredit: 10, Reputation: 2, Capacity: 1, TreasuryShareCredit: 3}

func (c *missionChain) create(i int, subnet string) {
	c.t.Helper()
	c.append(events.TypeMissionCreated, events.MissionCreated{MissionID: missionID(i), Title: "t", Description: "d",
		Publisher: "pub", PublisherKind: "agent", IssuerDID: did(0), Domain: "research", SubnetID: subnet,
		Reward: testReward, Payload: json.RawMessage(`{}`)})
}

func (c *missionChain) lifecycle(i int, subnet string, claimer int) {
	c.t.Helper()
	id := missionID(i)
	c.create(i, subnet)
	c.append(events.TypeMissionAccepted, events.MissionAccepted{MissionID: id, IssuerDID: did(0), Claimer: "x", ClaimerDID: did(claimer), Reward: testReward})
	c.append(events.TypeMissionCompleted, events.MissionCompleted{MissionID: id, Claimer: "x", Result: "r"})
	c.append(events.TypeMissionSettled, events.MissionSettled{MissionID: id, SettledBy: did(0), Reward: testReward})
	c.append(events.TypePaymentSettled, events.PaymentSettled{MissionID: id, To: "x", ToDID: did(claimer),
		AgentCredit: 10, Reputation: 2, Capacity: 1, Treasury: subnet, TreasuryShareCredit: 3})
}

// TestMissionsSkipContradictions: events the state machine forbids change
// nothing and are counted.
func TestMissionsSkipContradictions(t *testing.T) {
	c := newMissionChain(t)
	c.lifecycle(1, "genesis", 1)
	c.create(2, "genesis")
	c.sync()
	before, _ := json.Marshal(c.missions.Metrics())
	id1, id2 := missionID(1), missionID(2)
	c.create(1, "rim")                                                                                                      // id exists
	c.append(events.TypeMissionAccepted, events.MissionAccepted{MissionID: id1, Claimer: "y", ClaimerDID: did(2)})          // settled
	c.append(events.TypeMissionCompleted, events.MissionCompleted{MissionID: id2, Result: "r"})                             // not claimed
	c.append(events.TypeMissionSettled, events.MissionSettled{MissionID: id2})                                              // not completed
	c.append(events.TypePaymentSettled, events.PaymentSettled{MissionID: id1, ToDID: did(1), Treasury: "genesis"})          // paid already
	c.append(events.TypePaymentSettled, events.PaymentSettled{MissionID: id2, ToDID: did(1), Treasury: "genesis"})          // not settled
	c.append(events.TypeMissionAccepted, events.MissionAccepted{MissionID: missionID(9), Claimer: "y", ClaimerDID: did(2)}) // unknown
	c.append(events.TypeMissionCreated, map[string]any{"mission_id": 5})                                                    // malformed
	c.append(events.TypePaymentSettled, map[string]any{"receipt": "x402"})                                                  // not a mission's
	c.append("mission.other", map[string]any{"mission_id": id2})                                                            // not ours
	c.sync()
	if got := c.missions.Skipped(); got != 8 {
		t.Errorf("skipped %d, want 8", got)
	}
	// A decision model accepts and refuses exactly the same events.
	d := projections.NewMissionDecisions()
	if err := projections.Rebuild(t.Context(), c.log, d); err != nil {
		t.Fatal(err)
	}
	if d.Skipped() != 8 || d.Seq() != c.missions.Seq() {
		t.Errorf("decision model skipped %d at seq %d", d.Skipped(), d.Seq())
	}
	for _, id := range []string{id1, id2} {
		a, _ := c.missions.MissionRef(id)
		b, _ := d.MissionRef(id)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: read %+v, decision %+v", id, a, b)
		}
	}
	if d.Balance(did(1)) != c.missions.Balance(did(1)) || d.Treasury("genesis") != c.missions.Treasury("genesis") {
		t.Errorf("decision balances differ")
	}
	after, _ := json.Marshal(c.missions.Metrics())
	if string(before) != string(after) {
		t.Errorf("metrics changed:\n %s\n %s", before, after)
	}
	if b := c.missions.Balance(did(1)); b.Credit != 10 || b.MissionsCompleted != 1 {
		t.Errorf("balance = %+v", b)
	}
	// Apply reports the reason; a seq applied twice is a no-op; Reset discards.
	m := projections.NewMissions()
	ev := c.append(events.TypeMissionCompleted, events.MissionCompleted{MissionID: id2})
	if err := m.Apply(ev); err == nil {
		t.Error("completion of an unknown mission applied without error")
	}
	if err := m.Apply(ev); err != nil {
		t.Errorf("second apply: %v", err)
	}
	m.Reset()
	if m.Count() != 0 || m.Seq() != 0 || m.Skipped() != 0 {
		t.Error("Reset kept state")
	}
}

// TestMissionsPaidSince: the window sums are those of the payments after the
// window's start.
func TestMissionsPaidSince(t *testing.T) {
	c := newMissionChain(t)
	for i := range 5 {
		c.lifecycle(i, []string{"genesis", "rim"}[i%2], i%2+1)
	}
	c.sync()
	var stamps []time.Time
	c.log.Scan(1, c.log.Tip().Seq, func(ev *eventlog.Event) error {
		if ev.Type == events.TypePaymentSettled {
			stamps = append(stamps, ev.Time())
		}
		return nil
	})
	for k, since := range []time.Time{{}, stamps[0].Add(-time.Microsecond), stamps[0], stamps[2], stamps[4], time.Now().Add(time.Hour)} {
		want := 0
		for _, s := range stamps {
			if s.After(since) {
				want++
			}
		}
		got := c.missions.PaidSince(since)
		if got.Settlements != want || got.AgentCredit != int64(10*want) || got.TreasuryShareCredit != int64(3*want) || got.Reputation != int64(2*want) {
			t.Errorf("window %d: %+v, want %d settlements", k, got, want)
		}
	}
	if c.missions.Treasury("genesis") != 9 || c.missions.Treasury("rim") != 6 || c.missions.Balance(did(1)).Credit != 30 {
		t.Errorf("treasuries %v, balance %+v", c.missions.Treasuries(), c.missions.Balance(did(1)))
	}
}

// TestMissionIndexAgainstASortedList moves missions between states at random,
// many more than fit one index chunk, and checks every state's list against a
// reference, from every kind of cursor.
func TestMissionIndexAgainstASortedList(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	m := projections.NewMissions()
	seq := uint64(0)
	next := func(typ string, payload any) {
		seq++
		raw, _ := json.Marshal(payload)
		if err := m.Apply(eventlog.Event{Seq: seq, Type: typ, ID: fmt.Sprint(seq), Timestamp: "2026-01-01T00:00:00.000000Z", Payload: raw}); err != nil {
			t.Fatal(err)
		}
	}
	state := map[string]string{}
	var ids []string
	for i := range 1500 {
		id := missionID(i)
		next(events.TypeMissionCreated, events.MissionCreated{MissionID: id, Publisher: "p", IssuerDID: "d", Domain: "x",
			SubnetID: "s", Payload: json.RawMessage(`{}`)})
		ids, state[id] = append(ids, id), events.StateCreated
	}
	for range 3000 {
		id := ids[rng.Intn(len(ids))]
		switch state[id] {
		case events.StateCreated:
			next(events.TypeMissionAccepted, events.MissionAccepted{MissionID: id, Claimer: "c", ClaimerDID: "c"})
			state[id] = events.StateClaimed
		case events.StateClaimed:
			next(events.TypeMissionCompleted, events.MissionCompleted{MissionID: id})
			state[id] = events.StateCompleted
		case events.StateCompleted:
			next(events.TypeMissionSettled, events.MissionSettled{MissionID: id})
			state[id] = events.StateSettled
		}
	}
	for _, s := range []string{events.StateCreated, events.StateClaimed, events.StateCompleted, events.StateSettled} {
		var want []string
		for _, id := range ids {
			if state[id] == s {
				want = append(want, id)
			}
		}
		for _, limit := range []int{1, 7, 300, 1000} {
			var got []string
			cursor := ""
			for {
				page, next, err := m.List(projections.MissionFilter{State: s}, cursor, limit)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range page {
					got = append(got, r.MissionID)
				}
				if next == "" {
					break
				}
				cursor = next
			}
			if !sort.StringsAreSorted(got) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s limit %d: %d missions, want %d", s, limit, len(got), len(want))
			}
		}
	}
	if mt := m.Metrics(); mt.Total != 1500 {
		t.Errorf("metrics %+v", mt)
	}
}
