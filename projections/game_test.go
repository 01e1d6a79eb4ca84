package projections_test

import (
	"reflect"
	"testing"

	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// TestGameFoldsInstalls: the model records the starter set and each pack once,
// in chain order; a second install of either, or a malformed record, is
// skipped and changes nothing; a rebuild ends in the same state.
func TestGameFoldsInstalls(t *testing.T) {
	c := newChain(t)
	game := c.game
	if must(game.StarterInstalled())(t) || must(game.PackInstalled("p"))(t) || len(must(game.Packs())(t)) != 0 {
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

	check := func(t *testing.T, g *projections.Game) {
		t.Helper()
		if got := must(g.Skipped())(t); got != 6 {
			t.Errorf("skipped %d, want 6", got)
		}
		in, ok := must2(g.Starter())(t)
		want := projections.GameInstall{CatalogVersion: "1", SubnetID: "genesis", InstalledBy: did(0),
			InstalledAt: first.Timestamp, EventID: first.ID, TemplateIDs: starter.TemplateIDs, MissionIDs: starter.MissionIDs}
		if !ok || !reflect.DeepEqual(in, want) || !must(g.StarterInstalled())(t) {
			t.Errorf("starter = %+v, %v\nwant %+v", in, ok, want)
		}
		var ids []string
		for _, p := range must(g.Packs())(t) {
			ids = append(ids, p.PackID+":"+p.MissionIDs[0])
		}
		if !reflect.DeepEqual(ids, []string{"p:" + missionID(3), "r:" + missionID(7)}) {
			t.Errorf("packs %v", ids)
		}
		if !must(g.PackInstalled("p"))(t) || must(g.PackInstalled("q"))(t) {
			t.Error("PackInstalled disagrees with Packs")
		}
		if p, ok := must2(g.Pack("r"))(t); !ok || p.PackID != "r" || p.MissionIDs[0] != missionID(7) {
			t.Errorf("pack r = %+v, %v", p, ok)
		}
		if _, ok := must2(g.Pack("q"))(t); ok {
			t.Error("a refused pack is installed")
		}
		// What the model returns is a copy.
		in.MissionIDs[0] = "changed"
		if again, _ := must2(g.Starter())(t); again.MissionIDs[0] != missionID(1) {
			t.Error("Starter returned a reference into the model")
		}
	}
	t.Run("folded by the log", func(t *testing.T) {
		check(t, game)
		// The decisions' view reads the same state once everything is durable.
		if !must(game.Decisions().StarterInstalled())(t) || !must(game.Decisions().PackInstalled("r"))(t) ||
			must(game.Decisions().PackInstalled("q"))(t) {
			t.Error("the decisions' view disagrees")
		}
	})
	t.Run("rebuilt", func(t *testing.T) {
		c.rebuild(t)
		check(t, game)
	})
}
