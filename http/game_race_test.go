package http

import (
	"net/http"
	"slices"
	"testing"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
)

// TestConcurrentInstalls: sixteen installs of each set at once, the two sets
// interleaved: every call gets 200 with the same missions, exactly one per set
// reports published, and the chain holds each set's missions and record once.
func TestConcurrentInstalls(t *testing.T) {
	n := newCivNode(t)
	const k = 16
	rs := make([]response, 2*k)
	statuses := race(t, 2*k, func(i int) response {
		rs[i] = n.civPost(gameSets[i%2].install, map[string]any{})
		return rs[i]
	}, "")
	if statuses[http.StatusOK] != 2*k {
		t.Fatalf("statuses %v; want %d 200s", statuses, 2*k)
	}
	cat := catalog.Default()
	for s, set := range gameSets {
		var first gameSet
		published := 0
		for i := s; i < 2*k; i += 2 {
			var got gameSet
			rs[i].wantOK(t, &got)
			if *got.Published {
				published++
			}
			if first.MissionIDs == nil {
				first = got
			}
			if !got.Installed || !slices.Equal(got.MissionIDs, first.MissionIDs) || *got.InstalledAt != *first.InstalledAt {
				t.Errorf("%s: call %d answered %s, another %v", set.name, i, rs[i].body, first.MissionIDs)
			}
		}
		if published != 1 {
			t.Errorf("%s: %d calls report published, want 1", set.name, published)
		}
		if _, total, err := n.log.Query(eventlog.Query{Type: set.event, Limit: 1}); err != nil || total != 1 {
			t.Errorf("%s: %d records on the chain (%v)", set.name, total, err)
		}
		if len(first.MissionIDs) != len(set.templates(cat)) {
			t.Errorf("%s: %d missions for %d templates", set.name, len(first.MissionIDs), len(set.templates(cat)))
		}
	}
	want := len(cat.Starter()) + len(cat.PackTemplates(cat.DefaultPack().ID))
	if _, total, _ := n.log.Query(eventlog.Query{Type: "mission.created", Limit: 1}); total != uint64(want) {
		t.Errorf("%d missions on the chain, want %d", total, want)
	}
	if c, err := n.mread.Count(); err != nil || c != want {
		t.Errorf("%d missions in the read model, want %d", c, want)
	}
}
