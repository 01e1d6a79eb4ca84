package projections_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// chain is an in-memory log whose read model follows commits, as cmd wires it.
// The tests append event payloads directly: the projection must fold whatever the
// chain holds, including events no command would write.
type chain struct {
	t    *testing.T
	log  *eventlog.Log
	read *projections.Identities
}

func newChain(t *testing.T) *chain {
	t.Helper()
	c := &chain{t: t, read: projections.NewIdentities()}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
		Logger: slog.New(slog.DiscardHandler), OnCommit: c.read.ApplyEvents})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c.log = l
	if err := projections.Rebuild(context.Background(), l, c.read); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *chain) append(typ string, payload any) eventlog.Event {
	c.t.Helper()
	evs, err := c.log.Append(context.Background(), eventlog.Draft{Type: typ, Payload: payload})
	if err != nil {
		c.t.Fatal(err)
	}
	return evs[0]
}

func did(i int) string { return fmt.Sprintf("did:key:zagent%04d", i) }

func (c *chain) bootstrap(i int, slug string) eventlog.Event {
	c.t.Helper()
	return c.append(events.TypeIdentityBootstrapped, events.IdentityBootstrapped{
		AgentDID: did(i), PublicID: slug, DisplayName: "Agent " + slug, KeySalt: "00"})
}

func ptr[T any](v T) *T { return &v }

// rebuilt folds the chain into a fresh model.
func (c *chain) rebuilt() *projections.Identities {
	c.t.Helper()
	m := projections.NewIdentities()
	if err := projections.Rebuild(context.Background(), c.log, m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func TestIdentitiesFold(t *testing.T) {
	c := newChain(t)
	boot := c.bootstrap(1, "ada")
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(1), Faction: ptr("order"), HomeSubnetID: ptr("genesis")})
	rec, ok := c.read.Record(did(1))
	if !ok {
		t.Fatal("bootstrapped identity missing")
	}
	want := projections.IdentityRecord{AgentDID: did(1), PublicID: "ada", DisplayName: "Agent ada",
		CapabilitiesGranted: []string{}, SubnetMemberships: []string{}, CreatedAt: boot.Timestamp, UpdatedAt: boot.Timestamp}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("record = %+v\n want %+v", rec, want)
	}
	upd := c.append(events.TypeIdentityUpdated, events.IdentityUpdated{AgentDID: did(1), PublicID: "ada-2", DisplayName: "Ada",
		ModelProvider: ptr("local"), CapabilitiesGranted: []string{"x"}, SubnetMemberships: []string{"genesis", "rim"}})
	bind := c.append(events.TypeControllerBindingUpdated, events.ControllerBindingUpdated{AgentDID: did(1),
		ControllerKind: "local_model", ControllerRef: "gpu", OwnershipScope: "exclusive", Active: true})
	rec, _ = c.read.RecordBySlug("ada-2")
	if rec.DisplayName != "Ada" || *rec.ModelProvider != "local" || rec.ControllerID == nil || *rec.ControllerID != "gpu" ||
		rec.ControllerBinding == nil || rec.ControllerBinding.CreatedAt != bind.Timestamp || rec.UpdatedAt != bind.Timestamp {
		t.Fatalf("record after updates = %+v", rec)
	}
	if _, ok := c.read.RecordBySlug("ada"); ok {
		t.Error("old slug still resolves")
	}
	// An inactive binding keeps its created_at and clears controller_id.
	c.append(events.TypeControllerBindingUpdated, events.ControllerBindingUpdated{AgentDID: did(1),
		ControllerKind: "local_model", ControllerRef: "gpu", OwnershipScope: "exclusive", Active: false})
	rec, _ = c.read.Record(did(1))
	if rec.ControllerID != nil || rec.ControllerBinding.Active || rec.ControllerBinding.CreatedAt != bind.Timestamp {
		t.Errorf("record after deactivation = %+v", rec)
	}
	if got := c.read.ActiveBindingsByRef("gpu"); len(got) != 0 {
		t.Errorf("inactive binding still holds its ref: %+v", got)
	}
	if s := c.read.Subnet("genesis"); s.HomeIdentities != 1 || s.MemberIdentities != 1 {
		t.Errorf("genesis = %+v", s)
	}
	if s := c.read.Subnet("rim"); s.HomeIdentities != 0 || s.MemberIdentities != 1 {
		t.Errorf("rim = %+v", s)
	}
	if got := c.read.RecentEvents(did(1)); len(got) != 5 || got[0] != boot.Seq || got[2] != upd.Seq {
		t.Errorf("recent events = %v", got)
	}
	// The returned record is a copy.
	rec.CapabilitiesGranted[0] = "mutated"
	if again, _ := c.read.Record(did(1)); again.CapabilitiesGranted[0] != "x" {
		t.Error("a caller could modify the model through a record")
	}
	if c.read.Skipped() != 0 {
		t.Errorf("skipped %d", c.read.Skipped())
	}
}

func TestIdentitiesSkipContradictions(t *testing.T) {
	c := newChain(t)
	c.bootstrap(1, "ada")
	c.bootstrap(2, "bob")
	before := c.rebuilt()
	c.bootstrap(1, "again")                                                      // DID exists
	c.bootstrap(3, "ada")                                                        // slug taken
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(9)}) // unknown agent
	c.append(events.TypeIdentityUpdated, events.IdentityUpdated{AgentDID: did(2), PublicID: "ada", DisplayName: "x"})
	c.append(events.TypeIdentityUpdated, map[string]any{"agent_did": 5}) // malformed
	c.append("mission.created", map[string]any{"agent_did": did(1)})     // not ours
	if got := c.read.Skipped(); got != 5 {
		t.Errorf("skipped %d, want 5", got)
	}
	if c.read.Count() != 2 {
		t.Errorf("count %d, want 2", c.read.Count())
	}
	for _, d := range []string{did(1), did(2)} {
		a, _ := before.Record(d)
		b, _ := c.read.Record(d)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s changed by refused events:\n%+v\n%+v", d, a, b)
		}
	}
	// Apply reports the reason; applying a seq twice is a no-op.
	m := projections.NewIdentities()
	ev := c.bootstrap(4, "ok")
	if err := m.Apply(ev); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(ev); err != nil || m.Count() != 1 {
		t.Fatalf("second apply: %v, count %d", err, m.Count())
	}
	bad := c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(8)})
	if err := m.Apply(bad); err == nil {
		t.Error("profile of an unknown agent applied without error")
	}
	m.Reset()
	if m.Count() != 0 || m.Seq() != 0 || m.Skipped() != 0 {
		t.Error("Reset kept state")
	}
}

func TestRecentEventsKeepsTheLatest(t *testing.T) {
	c := newChain(t)
	c.bootstrap(1, "ada")
	var last []uint64
	for range 30 {
		ev := c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(1)})
		last = append(last, ev.Seq)
	}
	got := c.read.RecentEvents(did(1))
	if !reflect.DeepEqual(got, last[10:]) {
		t.Errorf("recent = %v\n want %v", got, last[10:])
	}
}

func TestListPagesAndCursor(t *testing.T) {
	c := newChain(t)
	for i := range 7 {
		c.bootstrap(i, fmt.Sprintf("agent-%d", i))
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		recs, next, err := c.read.List(cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range recs {
			got = append(got, r.PublicID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(got) != 7 || got[0] != "agent-0" || got[6] != "agent-6" {
		t.Errorf("%d pages: %v", pages, got)
	}
	// A page that ends exactly at the end has no next cursor.
	if _, next, _ := c.read.List("", 7); next != "" {
		t.Errorf("full page has next cursor %q", next)
	}
	for _, bad := range []string{"x", "AAAAAAAAAAAA", "aQAAAAAAAAAB=", "aQAAAAAAAAAB!", "aQAAAAAAAAABAA"} {
		if _, _, err := c.read.List(bad, 3); !errors.Is(err, projections.ErrBadCursor) {
			t.Errorf("cursor %q: err = %v", bad, err)
		}
	}
}

// TestListWhileAdding pages through the identities while other goroutines keep
// bootstrapping: every identity that existed when paging began is seen exactly
// once, and nothing is seen twice.
func TestListWhileAdding(t *testing.T) {
	c := newChain(t)
	for i := range 100 {
		c.bootstrap(i, fmt.Sprintf("agent-%d", i))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := 1000 + w*100000 + i
				if _, err := c.log.Append(context.Background(), eventlog.Draft{Type: events.TypeIdentityBootstrapped,
					Payload: events.IdentityBootstrapped{AgentDID: did(n), PublicID: fmt.Sprintf("agent-%d", n), DisplayName: "x", KeySalt: "00"}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := map[string]int{}
	cursor := ""
	for {
		recs, next, err := c.read.List(cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			seen[r.AgentDID]++
		}
		if next == "" || len(seen) > 2000 {
			break
		}
		cursor = next
	}
	close(stop)
	wg.Wait()
	for i := range 100 {
		if seen[did(i)] != 1 {
			t.Errorf("%s seen %d times", did(i), seen[did(i)])
		}
	}
	for d, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", d, n)
		}
	}
}

// TestRebuildEqualsLive: a model rebuilt from the chain answers every query as
// the one that followed the commits.
func TestRebuildEqualsLive(t *testing.T) {
	c := newChain(t)
	for i := range 40 {
		c.bootstrap(i, fmt.Sprintf("agent-%d", i))
		c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(i),
			Faction: ptr([]string{"freeport", "order", "frontier"}[i%3]), Role: ptr("broker"),
			HomeSubnetID: ptr(fmt.Sprintf("subnet-%d", i%4))})
		if i%2 == 0 {
			c.append(events.TypeControllerBindingUpdated, events.ControllerBindingUpdated{AgentDID: did(i),
				ControllerKind: "local_model", ControllerRef: fmt.Sprintf("ref-%d", i%5), OwnershipScope: "shared", Active: i%4 == 0})
		}
		if i%3 == 0 {
			c.append(events.TypeIdentityUpdated, events.IdentityUpdated{AgentDID: did(i), PublicID: fmt.Sprintf("renamed-%d", i),
				DisplayName: "R", SubnetMemberships: []string{"subnet-9"}})
		}
	}
	live, fresh := c.read, c.rebuilt()
	same := func(what string, a, b any) {
		t.Helper()
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s differs after rebuild:\n live %s\n rebuilt %s", what, ja, jb)
		}
	}
	for _, m := range []*projections.Identities{live, fresh} {
		if m.Seq() != c.log.Tip().Seq {
			t.Errorf("model at seq %d, chain at %d", m.Seq(), c.log.Tip().Seq)
		}
	}
	l1, _, _ := live.Supervise("", 1000)
	l2, _, _ := fresh.Supervise("", 1000)
	same("supervision list", l1, l2)
	same("metrics", live.Metrics(), fresh.Metrics())
	same("subnets", live.Subnets(), fresh.Subnets())
	for i := range 40 {
		for _, q := range []func(*projections.Identities) any{
			func(m *projections.Identities) any { r, _ := m.Record(did(i)); return r },
			func(m *projections.Identities) any { b, _, _ := m.Binding(did(i)); return b },
			func(m *projections.Identities) any { p, _ := m.Profile(did(i)); return p },
			func(m *projections.Identities) any { return m.RecentEvents(did(i)) },
			func(m *projections.Identities) any { r, _ := m.IdentityByDID(did(i)); return r },
		} {
			same(did(i), q(live), q(fresh))
		}
	}
	for r := range 5 {
		ref := fmt.Sprintf("ref-%d", r)
		same(ref, live.ActiveBindingsByRef(ref), fresh.ActiveBindingsByRef(ref))
	}
}

func TestMetrics(t *testing.T) {
	c := newChain(t)
	c.bootstrap(1, "a")
	c.bootstrap(2, "b")
	c.bootstrap(3, "c")
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(1), Faction: ptr("order"), Role: ptr("broker"), HomeSubnetID: ptr("genesis")})
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(2), Faction: ptr("order"), Strategy: ptr("balanced"), HomeSubnetID: ptr("genesis")})
	c.append(events.TypeProfileUpdated, events.ProfileUpdated{AgentDID: did(2), Faction: ptr("frontier"), HomeSubnetID: ptr("rim")})
	c.append(events.TypeIdentityUpdated, events.IdentityUpdated{AgentDID: did(3), PublicID: "c", DisplayName: "c", SubnetMemberships: []string{"genesis"}})
	c.append(events.TypeControllerBindingUpdated, events.ControllerBindingUpdated{AgentDID: did(1), ControllerKind: "local_model", ControllerRef: "x", OwnershipScope: "exclusive", Active: true})
	c.append(events.TypeControllerBindingUpdated, events.ControllerBindingUpdated{AgentDID: did(2), ControllerKind: "human_operator", ControllerRef: "y", OwnershipScope: "shared", Active: false})
	got, _ := json.Marshal(c.read.Metrics())
	want := `{"identities":3,"by_faction":{"frontier":1,"order":1},"by_role":{"broker":1},"by_strategy":{},` +
		`"by_home_subnet":{"genesis":1,"rim":1},"by_subnet_membership":{"genesis":1},` +
		`"bindings":{"total":2,"active":1,"by_kind":{"local_model":1},"shared":0},` +
		`"stats_totals":{"credit":0,"reputation":0,"capacity":0,"missions_completed":0}}`
	if string(got) != want {
		t.Errorf("metrics = %s\n want %s", got, want)
	}
	subnets, _ := json.Marshal(c.read.Subnets())
	if want := `[{"subnet_id":"genesis","home_identities":1,"member_identities":1},{"subnet_id":"rim","home_identities":1,"member_identities":0}]`; string(subnets) != want {
		t.Errorf("subnets = %s\n want %s", subnets, want)
	}
}
