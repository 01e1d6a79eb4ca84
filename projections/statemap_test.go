package projections_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// stateEntries reads the whole state map of l.
func stateEntries(t testing.TB, l *eventlog.Log) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := projections.StateEntries(l, func(k string, v []byte) error {
		if _, dup := out[k]; dup {
			t.Errorf("StateEntries gives %s twice", k)
		}
		out[k] = string(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changedKeys are the keys whose value differs between two maps, added and
// removed ones included, sorted.
func changedKeys(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// stateChain is the golden chain (every event type, accepted and refused
// ones) followed by what it does not show: a binding made inactive, a rename,
// a settlement that pays a treasury 0, and a mission.created appended with
// its decoded payload, as the mission commands append it.
func stateChain(t *testing.T) []eventlog.Draft {
	t.Helper()
	g := goldenChain(t)
	var drafts []eventlog.Draft
	if err := g.log.Scan(2, g.log.Tip().Seq, func(ev *eventlog.Event) error {
		drafts = append(drafts, eventlog.Draft{Type: ev.Type, Payload: json.RawMessage(bytes.Clone(ev.Payload))})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	drafts = append(drafts,
		eventlog.Draft{Type: events.TypeControllerBindingUpdated, Payload: events.ControllerBindingUpdated{AgentDID: did(1),
			ControllerKind: "local_model", ControllerRef: "gpu", OwnershipScope: events.ScopeExclusive, Active: false}},
		eventlog.Draft{Type: events.TypeIdentityUpdated, Payload: events.IdentityUpdated{AgentDID: did(2), PublicID: "bobby",
			DisplayName: "Bobby", SubnetMemberships: []string{"rim"}}},
	)
	free := created(7, "outer")
	free.Reward = events.Reward{AgentCredit: 4}
	drafts = append(drafts, eventlog.Draft{Type: events.TypeMissionCreated, Payload: free, Decoded: free})
	id := free.MissionID
	drafts = append(drafts,
		eventlog.Draft{Type: events.TypeMissionAccepted, Payload: events.MissionAccepted{MissionID: id, IssuerDID: did(0),
			Claimer: "ada", ClaimerDID: did(1), Reward: free.Reward}},
		eventlog.Draft{Type: events.TypeMissionCompleted, Payload: events.MissionCompleted{MissionID: id, Claimer: "ada", Result: "<done & dusted>\n"}},
		eventlog.Draft{Type: events.TypeMissionSettled, Payload: events.MissionSettled{MissionID: id, SettledBy: did(0), Reward: free.Reward}},
		eventlog.Draft{Type: events.TypePaymentSettled, Payload: events.PaymentSettled{MissionID: id, To: "ada", ToDID: did(1),
			AgentCredit: 4, Treasury: "outer"}},
	)
	return drafts
}

// TestStateKeysCoverChanges appends a chain holding every event type one
// event at a time and checks, after each, that the keys StateKeys names
// cover every entry of the state map that changed, appeared or went away:
// a state map kept up to date from StateKeys alone never goes stale. It
// reads the keys both of the event Append returns and of the event read
// back from the store, and checks that the chain changed every kind.
func TestStateKeysCoverChanges(t *testing.T) {
	c := newChain(t)
	kinds := map[string]bool{}
	before := stateEntries(t, c.log)
	if len(before) != 0 {
		t.Fatalf("a chain of its genesis alone has state entries: %v", before)
	}
	for _, d := range stateChain(t) {
		evs, err := c.log.Append(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		ev := &evs[0]
		stored, err := c.log.Event(ev.Seq)
		if err != nil {
			t.Fatal(err)
		}
		after := stateEntries(t, c.log)
		changed := changedKeys(before, after)
		for _, e := range []*eventlog.Event{ev, stored} {
			named, err := projections.StateKeys(e)
			if err != nil {
				t.Fatalf("StateKeys of %s at seq %d: %v", e.Type, e.Seq, err)
			}
			for _, k := range changed {
				if !slices.Contains(named, k) {
					t.Errorf("%s at seq %d changed %s, which StateKeys does not name (it names %v)", e.Type, e.Seq, k, named)
				}
			}
		}
		for _, k := range changed {
			kind, _, _ := projections.SplitStateKey(k)
			kinds[kind] = true
		}
		before = after
	}
	for _, kind := range []string{projections.StateKindIdentity, projections.StateKindBinding, projections.StateKindProfile,
		projections.StateKindMission, projections.StateKindTreasury} {
		if !kinds[kind] {
			t.Errorf("no event of the chain changed a %s entry: the test does not cover it", kind)
		}
	}
}

// TestStateMapIncremental keeps a state map up to date as StateView says a
// caller should, over the chain appended several events at a time: after
// each append it opens a view, names the keys of the events up to the view's
// Seq, reads their values from that view, and must then hold exactly what the
// view's Entries hold.
func TestStateMapIncremental(t *testing.T) {
	c := newChain(t)
	kept := map[string]string{}
	applied := c.log.Tip().Seq
	drafts := stateChain(t)
	for i := 0; i < len(drafts); i += 3 {
		if _, err := c.log.Append(context.Background(), drafts[i:min(i+3, len(drafts))]...); err != nil {
			t.Fatal(err)
		}
		s, err := projections.OpenStateView(c.log)
		if err != nil {
			t.Fatal(err)
		}
		through, err := s.Seq()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		if err := c.log.Scan(applied+1, through, func(ev *eventlog.Event) error {
			keys, err = projections.AppendStateKeys(keys, ev)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			v, ok, err := s.Value(k)
			switch {
			case err != nil:
				t.Fatal(err)
			case ok:
				kept[k] = string(v)
			default:
				delete(kept, k)
			}
		}
		applied = through
		all := map[string]string{}
		if err := s.Entries(func(k string, v []byte) error {
			all[k] = string(v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if diff := changedKeys(all, kept); len(diff) > 0 {
			t.Fatalf("through seq %d the kept map differs from the view's entries at %v", through, diff)
		}
	}
	if len(kept) == 0 {
		t.Fatal("the chain made no entries")
	}
}

// TestStateValuesAreTheRecords checks every entry against the query that
// backs its route: the value is the JCS form of that record, StateValue
// agrees with StateEntries, and keys of records that do not exist are absent.
func TestStateValuesAreTheRecords(t *testing.T) {
	c := newChain(t)
	for _, d := range stateChain(t) {
		if _, err := c.log.Append(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	canon := func(v any) string {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := eventlog.CanonicalObject(raw)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	entries := stateEntries(t, c.log)
	counts := map[string]int{}
	for k, v := range entries {
		kind, id, _ := projections.SplitStateKey(k)
		counts[kind]++
		var want string
		switch kind {
		case projections.StateKindIdentity:
			r, _ := must2(c.ids.Record(id))(t)
			want = canon(r)
		case projections.StateKindBinding:
			b, _, ok, err := c.ids.Binding(id)
			if err != nil || !ok {
				t.Fatalf("binding of %s: %v %v", id, ok, err)
			}
			want = canon(b)
		case projections.StateKindProfile:
			p, _ := must2(c.ids.Profile(id))(t)
			want = canon(p)
		case projections.StateKindMission:
			m, _ := must2(c.missions.Mission(id))(t)
			want = canon(m)
		case projections.StateKindTreasury:
			want = jsonOf(t, must(c.missions.Treasury(id))(t))
		default:
			t.Fatalf("entry %s of no kind", k)
		}
		if v != want {
			t.Errorf("%s = %s, want %s", k, v, want)
		}
		got, ok, err := projections.StateValue(c.log, k)
		if err != nil || !ok || string(got) != v {
			t.Errorf("StateValue(%s) = %s, %v, %v; StateEntries gives %s", k, got, ok, err, v)
		}
	}
	// Two identities, each with a profile, one binding (ada's), four
	// missions (the golden chain's three and the free one), two treasuries
	// (genesis, and outer, which a settlement paid 0).
	want := map[string]int{projections.StateKindIdentity: 2, projections.StateKindProfile: 2, projections.StateKindBinding: 1,
		projections.StateKindMission: 4, projections.StateKindTreasury: 2}
	for kind, n := range want {
		if counts[kind] != n {
			t.Errorf("%d %s entries, want %d (entries %v)", counts[kind], kind, n, counts)
		}
	}
	if _, ok := entries[projections.StateKey(projections.StateKindTreasury, "outer")]; !ok {
		t.Errorf("the treasury a settlement paid 0 has no entry")
	}
	for _, k := range []string{
		projections.StateKey(projections.StateKindIdentity, did(9)),
		projections.StateKey(projections.StateKindProfile, did(9)),
		projections.StateKey(projections.StateKindBinding, did(2)), // bob never had one
		projections.StateKey(projections.StateKindMission, missionID(99)),
		projections.StateKey(projections.StateKindTreasury, "nowhere"),
		"oracle/prices.eth-usd", "identity", "",
		projections.StateKey(projections.StateKindIdentity, did(1)+"\x00"), // a model key, not a record's
		projections.StateKey(projections.StateKindMission, ""),
	} {
		if v, ok, err := projections.StateValue(c.log, k); err != nil || ok {
			t.Errorf("StateValue(%q) = %s, %v, %v; want absent", k, v, ok, err)
		}
	}
}

// TestStateViewSeq: a view's values are those of the chain up to its Seq,
// the seq of the last event the models applied.
func TestStateViewSeq(t *testing.T) {
	c := newChain(t)
	check := func() {
		t.Helper()
		s, err := projections.OpenStateView(c.log)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if seq, err := s.Seq(); err != nil || seq != c.log.Tip().Seq {
			t.Errorf("view at seq %d (%v), tip %d", seq, err, c.log.Tip().Seq)
		}
	}
	check()
	c.bootstrap(1, "ada")
	c.create(1, "genesis")
	check()
}

// TestStateKeysOfPayloads: a payload the folds cannot decode names no key
// and says so; a member of another type that no fold of the event's type
// reads does not stop the keys from being named; an x402 receipt and an
// event no record depends on name nothing.
func TestStateKeysOfPayloads(t *testing.T) {
	ev := func(typ, payload string) *eventlog.Event {
		return &eventlog.Event{Type: typ, Seq: 5, Payload: json.RawMessage(payload)}
	}
	dst := []string{"kept"}
	got, err := projections.AppendStateKeys(dst, ev(events.TypeIdentityUpdated, `{"agent_did":5}`))
	if err == nil || !slices.Equal(got, []string{"kept"}) {
		t.Errorf("an undecodable payload gives %v, %v; want an error and dst as it was", got, err)
	}
	for _, tc := range []struct {
		ev   *eventlog.Event
		want []string
	}{
		{ev(events.TypeMissionCreated, `{"mission_id":"m1","to_did":5,"agent_did":[]}`), []string{"mission/m1"}},
		{ev(events.TypePaymentSettled, `{"payment_id":"p","rail":"x402","amount":"5"}`), nil},
		{ev(events.TypePaymentSettled, `{"mission_id":"m1","to_did":"d","treasury":"genesis","amount":7}`),
			[]string{"identity/d", "treasury/genesis"}},
		{ev(events.TypeOracleSettled, `{"subscriber_did":"s","publisher_did":"p"}`), []string{"identity/s", "identity/p"}},
		{ev(events.TypeMissionAccepted, `{"mission_id":"m1","claimer_did":"d"}`), []string{"mission/m1"}},
		{ev(events.TypeOracleFeedPublished, `{"feed":"f"}`), nil},
		{ev("state.committed", `{"through_seq":4}`), nil},
	} {
		got, err := projections.StateKeys(tc.ev)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("StateKeys(%s %s) = %v, %v; want %v", tc.ev.Type, tc.ev.Payload, got, err, tc.want)
		}
	}
}

// BenchmarkAppendStateKeys is the cost of naming the keys of a settlement's
// payment, read from the store (decoded from its JSON).
func BenchmarkAppendStateKeys(b *testing.B) {
	ev := &eventlog.Event{Type: events.TypePaymentSettled, Payload: json.RawMessage(
		`{"agent_credit":25,"capacity":1,"mission_id":"019b0000-0000-7000-8000-000000000001","reputation":3,` +
			`"to":"ada","to_did":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK","treasury":"genesis","treasury_share_credit":5}`)}
	var dst []string
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = projections.AppendStateKeys(dst[:0], ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateValue is the cost of one entry's value read from a view:
// a mission's and an identity's.
func BenchmarkStateValue(b *testing.B) {
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
		Logger: slog.New(slog.DiscardHandler), Models: projections.Folder{}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(context.Background(),
		eventlog.Draft{Type: events.TypeIdentityBootstrapped, Payload: events.IdentityBootstrapped{AgentDID: did(1),
			PublicID: "ada", DisplayName: "Ada", KeySalt: "00"}},
		eventlog.Draft{Type: events.TypeControllerBindingUpdated, Payload: events.ControllerBindingUpdated{AgentDID: did(1),
			ControllerKind: "local_model", ControllerRef: "gpu", OwnershipScope: events.ScopeExclusive, Active: true}},
		eventlog.Draft{Type: events.TypeMissionCreated, Payload: created(1, "genesis")},
	); err != nil {
		b.Fatal(err)
	}
	for _, k := range []string{projections.StateKey(projections.StateKindMission, missionID(1)),
		projections.StateKey(projections.StateKindIdentity, did(1))} {
		kind, _, _ := projections.SplitStateKey(k)
		b.Run(kind, func(b *testing.B) {
			s, err := projections.OpenStateView(l)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := s.Value(k); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
