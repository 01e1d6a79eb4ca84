package projections_test

import (
	"reflect"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

var _ projections.Model = (*projections.Game)(nil)

// TestGameFoldsInstalls: the model records the starter set and each pack once,
// in chain order; a second install of either, or a malformed record, is
// skipped and changes nothing; a rebuild ends in the same state.
func TestGameFoldsInstalls(t *testing.T) {
	c := newChain(t)
	game := projections.NewGame()
	if game.StarterInstalled() || game.PackInstalled("p") || len(game.Packs()) != 0 {
		t.Fatal("a new model has installs")
	}
	starter := events.StarterMissionsInstalled{CatalogVersion: "1", SubnetID: "genesis",
		TemplateIDs: []string{"a", "b"}, MissionIDs: []string{missionID(1), missionID(2)}, InstalledBy: did(0)}
	pack := func(id string, n int) events.MissionPackInstalled {
		return events.MissionPackInstalled{CatalogVersion: "1", PackID: id, SubnetID: "genesis",
			TemplateIDs: []string{"c"}, MissionIDs: []string{missionID(n)}, InstalledBy: did(0)}
	}
	first := c.append(events.TypeGameStarterMissionsInstalled, starter)
	c.append(events.TypeGameMissionPackInstalled, pack("p", 3))
	c.append(events.TypeGameStarterMissionsInstalled, starter)                                      // again: skipped
	c.append(events.TypeGameMissionPackInstalled, pack("p", 4))                                     // again: skipped
	c.append(events.TypeGameMissionPackInstalled, pack("", 5))                                      // no pack_id
	c.append(events.TypeGameMissionPackInstalled, events.MissionPackInstalled{PackID: "q"})         // no missions
	c.append(events.TypeGameMissionPackInstalled, map[string]any{"pack_id": "q", "mission_ids": 1}) // malformed
	bad := pack("q", 6)
	bad.TemplateIDs = nil
	c.append(events.TypeGameMissionPackInstalled, bad) // unpaired ids
	c.append(events.TypeGameMissionPackInstalled, pack("r", 7))
	c.append(events.TypeMissionCreated, map[string]any{"x": 1}) // not the game's

	skippedWant := uint64(6)
	for _, tc := range []struct {
		name string
		feed func(*projections.Game)
	}{
		{"applied one by one", func(g *projections.Game) {
			if err := c.log.Scan(1, c.log.Tip().Seq, func(ev *eventlog.Event) error { g.Apply(*ev); return nil }); err != nil {
				t.Fatal(err)
			}
		}},
		{"rebuilt", func(g *projections.Game) {
			g.Apply(first) // state to be discarded by the rebuild
			if err := projections.Rebuild(t.Context(), c.log, g); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := projections.NewGame()
			tc.feed(g)
			if g.Skipped() != skippedWant || g.Seq() != c.log.Tip().Seq {
				t.Errorf("skipped %d, seq %d of %d", g.Skipped(), g.Seq(), c.log.Tip().Seq)
			}
			in, ok := g.Starter()
			want := projections.GameInstall{CatalogVersion: "1", SubnetID: "genesis", InstalledBy: did(0),
				InstalledAt: first.Timestamp, EventID: first.ID, TemplateIDs: starter.TemplateIDs, MissionIDs: starter.MissionIDs}
			if !ok || !reflect.DeepEqual(in, want) || !g.StarterInstalled() {
				t.Errorf("starter = %+v, %v\nwant %+v", in, ok, want)
			}
			var ids []string
			for _, p := range g.Packs() {
				ids = append(ids, p.PackID+":"+p.MissionIDs[0])
			}
			if !reflect.DeepEqual(ids, []string{"p:" + missionID(3), "r:" + missionID(7)}) {
				t.Errorf("packs %v", ids)
			}
			if !g.PackInstalled("p") || g.PackInstalled("q") {
				t.Error("PackInstalled disagrees with Packs")
			}
			// What the model returns is a copy.
			in.MissionIDs[0] = "changed"
			if again, _ := g.Starter(); again.MissionIDs[0] != missionID(1) {
				t.Error("Starter returned a reference into the model")
			}
		})
	}
}
