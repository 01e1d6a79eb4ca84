package http

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// TestBriefingTypes: the supervision briefing covers every type of the
// registry, and the civilization briefing exactly those of identities,
// bindings, profiles, missions, payments and the game (docs/api.md).
func TestBriefingTypes(t *testing.T) {
	var all []string
	for _, ty := range events.Types() {
		all = append(all, ty.Name)
	}
	if !slices.Equal(supervisionTypes, all) {
		t.Errorf("supervision briefing covers %v\n want every type %v", supervisionTypes, all)
	}
	var civ []string
	for _, name := range all {
		area, _, _ := strings.Cut(name, ".")
		switch area {
		case "identity", "controller_binding", "profile", "mission", "payment", "game":
			civ = append(civ, name)
		}
	}
	if !slices.Equal(civilizationTypes, civ) {
		t.Errorf("civilization briefing covers %v\n want %v", civilizationTypes, civ)
	}
}

// TestBriefingCountsTheWindow: events older than the window are not counted, the
// counts equal what a walk over the chain finds after the window's start, and the
// highlights are the newest covered events, verbatim.
func TestBriefingCountsTheWindow(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().Add(-50 * time.Hour).UnixMicro())
	n := newCivNodeWith(t, func(o *eventlog.Options) {
		o.Now = func() time.Time { return time.UnixMicro(clock.Load()) }
	})
	// Old: two days ago.
	n.bootstrap(map[string]any{"display_name": "Old Timer", "public_id": "old-timer"})
	n.appendEvents("mission.created", "peer.connected")
	// Recent: half an hour ago, so inside every window of 1 hour or more.
	clock.Store(time.Now().Add(-30 * time.Minute).UnixMicro())
	did, _ := n.bootstrap(map[string]any{"display_name": "New Comer"})
	n.civPost("/v1/civilization/profile", map[string]any{"agent_did": did, "faction": "order"}).wantOK(t, nil)
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did, "controller_kind": "local_model", "controller_ref": "r"}).wantOK(t, nil)
	n.appendEvents("mission.created", "mission.created", "oracle.feed.published", "custom.thing")
	for range 12 {
		n.civPost("/v1/civilization/profile", map[string]any{"agent_did": did, "role": "broker"}).wantOK(t, nil)
	}

	for _, tc := range []struct {
		path  string
		types []string
	}{
		{"/v1/civilization/briefing", civilizationTypes},
		{"/v1/civilization/briefing?hours=1", civilizationTypes},
		{"/v1/civilization/briefing?hours=720", civilizationTypes},
		{"/v1/supervision/briefing", supervisionTypes},
		{"/v1/supervision/briefing?hours=49", supervisionTypes},
		{"/v1/supervision/briefing?hours=51", supervisionTypes},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var b struct {
				Window struct {
					Hours int    `json:"hours"`
					Start string `json:"start"`
					End   string `json:"end"`
				} `json:"window"`
				TotalEvents uint64            `json:"total_events"`
				Counts      map[string]uint64 `json:"counts"`
				OtherEvents uint64            `json:"other_events"`
				Highlights  []json.RawMessage `json:"highlights"`
				Identities  int               `json:"identities"`
				Chain       *stateChain       `json:"chain"`
			}
			r := n.get(tc.path).wantOK(t, &b)
			u, _ := url.Parse(tc.path)
			wantHours := 24
			if h := u.Query().Get("hours"); h != "" {
				json.Unmarshal([]byte(h), &wantHours)
			}
			if b.Window.Hours != wantHours {
				t.Errorf("hours = %d, want %d", b.Window.Hours, wantHours)
			}
			start, err := time.Parse(eventlog.TimeLayout, b.Window.Start)
			if err != nil {
				t.Fatal(err)
			}
			// Count independently by walking the chain.
			want := map[string]uint64{}
			var total uint64
			var covered []eventlog.Event
			n.log.Scan(1, n.log.Tip().Seq, func(ev *eventlog.Event) error {
				if ev.Time().After(start) {
					total++
					want[ev.Type]++
					if slices.Contains(tc.types, ev.Type) {
						covered = append(covered, *ev)
					}
				}
				return nil
			})
			if b.TotalEvents != total {
				t.Errorf("total_events = %d, chain has %d", b.TotalEvents, total)
			}
			var sum uint64
			for _, typ := range tc.types {
				if b.Counts[typ] != want[typ] {
					t.Errorf("counts[%s] = %d, chain has %d", typ, b.Counts[typ], want[typ])
				}
				sum += want[typ]
			}
			if len(b.Counts) != len(tc.types) || b.OtherEvents != total-sum {
				t.Errorf("%d counts, other_events %d; want %d and %d", len(b.Counts), b.OtherEvents, len(tc.types), total-sum)
			}
			if len(covered) > briefingHighlights {
				covered = covered[len(covered)-briefingHighlights:]
			}
			if len(b.Highlights) != len(covered) {
				t.Fatalf("%d highlights, want %d", len(b.Highlights), len(covered))
			}
			for i, ev := range covered {
				if string(b.Highlights[i]) != string(ev.Raw()) {
					t.Errorf("highlight %d = %s\n want %s", i, b.Highlights[i], ev.Raw())
				}
			}
			if b.Identities != 2 {
				t.Errorf("identities = %d", b.Identities)
			}
			if (b.Chain != nil) != strings.HasPrefix(tc.path, "/v1/supervision/") {
				t.Errorf("chain = %+v in %s", b.Chain, r.body)
			}
		})
	}
	// The window really excludes the old events.
	var day struct {
		Counts map[string]uint64 `json:"counts"`
	}
	n.get("/v1/supervision/briefing").wantOK(t, &day)
	if day.Counts["identity.bootstrapped"] != 1 || day.Counts["mission.created"] != 2 || day.Counts["node.genesis"] != 0 ||
		day.Counts["peer.connected"] != 0 {
		t.Errorf("24h counts = %v", day.Counts)
	}
}

func TestBriefingOfAnEmptyWindow(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().Add(-100 * time.Hour).UnixMicro())
	n := newCivNodeWith(t, func(o *eventlog.Options) {
		o.Now = func() time.Time { return time.UnixMicro(clock.Load()) }
	})
	r := n.get("/v1/civilization/briefing?hours=1").wantOK(t, nil)
	var b map[string]json.RawMessage
	r.decode(t, &b)
	if string(b["total_events"]) != "0" || string(b["highlights"]) != "[]" || string(b["other_events"]) != "0" {
		t.Errorf("empty briefing = %s", r.body)
	}
	wantKeyOrder(t, "briefing", r.body, []string{"window", "total_events", "counts", "other_events", "highlights", "identities", "credits"})
	if want := `{"settlements":0,"agent_credit":0,"reputation":0,"capacity":0,"treasury_share_credit":0}`; string(b["credits"]) != want {
		t.Errorf("credits = %s, want %s", b["credits"], want)
	}
}

// TestBriefingIsOneSnapshot: while writers keep appending, every briefing counts
// over one chain position: its counts and other_events add up to its total, and a
// window that covers the whole chain counts exactly chain.seq events.
func TestBriefingIsOneSnapshot(t *testing.T) {
	n := newCivNode(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n.bootstrap(map[string]any{"display_name": "Writer"}) // slugs writer, writer-2, …
		}
	}()
	for range 30 {
		var b struct {
			TotalEvents uint64            `json:"total_events"`
			Counts      map[string]uint64 `json:"counts"`
			OtherEvents uint64            `json:"other_events"`
			Chain       *stateChain       `json:"chain"`
		}
		n.get("/v1/supervision/briefing").wantOK(t, &b)
		var sum uint64
		for _, c := range b.Counts {
			sum += c
		}
		if sum+b.OtherEvents != b.TotalEvents || b.TotalEvents != b.Chain.Seq {
			close(stop)
			<-done
			t.Fatalf("counts %d + other %d, total %d, chain seq %d", sum, b.OtherEvents, b.TotalEvents, b.Chain.Seq)
		}
	}
	close(stop)
	<-done
}
