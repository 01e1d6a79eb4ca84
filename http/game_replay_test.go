package http

import (
	"fmt"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// gameSnapshot answers every game query, in a fixed order: path, status and
// body.
func gameSnapshot(t *testing.T, n *testNode) []string {
	t.Helper()
	var out []string
	for _, path := range []string{"/v1/game/status", "/v1/game/starter-missions", "/v1/game/mission-pack", "/v1/game/bootstrap"} {
		r := n.get(path)
		out = append(out, fmt.Sprintf("GET %s → %d %s", path, r.status, r.body))
	}
	return out
}

// TestGameReplayEqualsLive: the game's read model rebuilt from the chain, in
// place and after a restart from the data directory, answers every game query
// byte for byte as the node that followed the chain live; after the restart
// the decision model still knows the sets are installed, so a repeat publishes
// nothing and answers with the same missions.
func TestGameReplayEqualsLive(t *testing.T) {
	dir := t.TempDir()
	onDisk := func(o *eventlog.Options) { o.InMemory, o.Dir = false, dir }
	w := newMissionWorldOn(t, newCivNodeWith(t, onDisk))
	var starter, pack gameSet
	w.civPost("/v1/game/starter-missions/bootstrap", map[string]any{}).wantOK(t, &starter)
	w.civPost("/v1/game/mission-pack/bootstrap", map[string]any{}).wantOK(t, &pack)
	missionActivity(t, w) // other missions around the game's
	for i, id := range starter.MissionIDs[:3] {
		claimer := []string{"ada", "bob", "clerk"}[i]
		if starter.Missions[i].Mission.RequiredRole != nil {
			continue
		}
		w.step(id, "claim", w.tokens[claimer], map[string]any{"claimer": claimer}).wantOK(t, nil)
		if i == 0 {
			w.step(id, "complete", w.tokens[claimer], map[string]any{"result": "hello"}).wantOK(t, nil)
			w.step(id, "settle", testToken, map[string]any{}).wantOK(t, nil)
		}
	}
	live := gameSnapshot(t, w.testNode)

	w.rebuildInPlace(t)
	compareSnapshots(t, "rebuilt in place", live, gameSnapshot(t, w.testNode))

	if err := w.log.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := newCivNodeWith(t, onDisk)
	compareSnapshots(t, "restarted", live, gameSnapshot(t, restarted.testNode))

	tip := restarted.log.Tip().Seq
	for _, tc := range []struct {
		path string
		was  gameSet
	}{{gameSets[0].install, starter}, {gameSets[1].install, pack}} {
		var again gameSet
		restarted.civPost(tc.path, map[string]any{}).wantOK(t, &again)
		if *again.Published || fmt.Sprint(again.MissionIDs) != fmt.Sprint(tc.was.MissionIDs) || *again.InstalledAt != *tc.was.InstalledAt {
			t.Errorf("%s after a restart: published %v, %v, want %v", tc.path, *again.Published, again.MissionIDs, tc.was.MissionIDs)
		}
	}
	if restarted.log.Tip().Seq != tip {
		t.Errorf("repeats after a restart appended %d events", restarted.log.Tip().Seq-tip)
	}
}
