package http

import (
	"fmt"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// missionActivity publishes missions of every kind and moves them through every
// state, by the owner and by agent tokens. It returns the mission ids.
func missionActivity(t *testing.T, w *missionWorld) []string {
	t.Helper()
	var ids []string
	for i := range 25 {
		edits := map[string]any{"title": fmt.Sprintf("Mission %d", i), "subnet_id": []string{"genesis", "rim"}[i%2],
			"domain": []string{"security", "logistics", "research"}[i%3], "reward": reward(i, i%4, i%2, 2*i)}
		token := w.tokens["pub"]
		if i%5 == 0 {
			edits["publisher"], edits["publisher_kind"], edits["required_faction"] = "genesis", "planetary_government", nil
			token = testToken
		}
		if i%6 == 0 {
			edits["payload"] = map[string]any{"n": i, "nested": map[string]any{"z": 1, "a": []any{true, nil, 1.5}}}
		}
		ids = append(ids, w.create(token, edits).MissionID)
	}
	for i, id := range ids {
		claimer := []string{"ada", "bob"}[i%2]
		if i%7 == 6 {
			continue
		}
		w.step(id, "claim", w.tokens[claimer], map[string]any{"claimer": claimer}).wantOK(t, nil)
		if i%3 == 2 {
			continue
		}
		w.step(id, "complete", w.tokens[claimer], map[string]any{"result": fmt.Sprintf("result of %d", i)}).wantOK(t, nil)
		if i%4 == 1 {
			continue
		}
		w.step(id, "settle", testToken, map[string]any{}).wantOK(t, nil)
	}
	return ids
}

// missionSnapshot answers every mission query of the API, and the views that
// show missions and credits, in a fixed order: each path with status and body.
// Briefings are left out: their window ends at the time of the request.
func missionSnapshot(t *testing.T, n *testNode, ids, slugs []string) []string {
	t.Helper()
	var out []string
	get := func(path string) {
		r := n.get(path)
		out = append(out, fmt.Sprintf("GET %s → %d %s", path, r.status, r.body))
	}
	for _, list := range []string{"/v1/core/missions?limit=4", "/v1/core/missions?state=settled&limit=3",
		"/v1/core/missions?subnet_id=rim&domain=security", "/v1/core/missions?publisher=genesis",
		"/v1/core/missions?required_role=enforcer&state=completed", "/v1/supervision/missions?limit=6"} {
		path := list
		for {
			var page struct {
				NextCursor *string `json:"next_cursor"`
			}
			r := n.get(path).wantOK(t, &page)
			out = append(out, fmt.Sprintf("GET %s → %s", path, r.body))
			if page.NextCursor == nil {
				break
			}
			path = list + "&cursor=" + *page.NextCursor
		}
	}
	for _, id := range ids {
		get("/v1/core/missions/" + id)
	}
	for _, slug := range slugs {
		get("/v1/core/missions/my?public_id=" + slug)
		get("/v1/supervision/home?public_id=" + slug)
		get("/v1/civilization/public-identity?public_id=" + slug)
	}
	get("/v1/state")
	get("/v1/civilization/metrics")
	return out
}

// TestMissionReplayEqualsLive: read models rebuilt from the chain, in place and
// after a restart from the data directory, answer every mission query byte for
// byte as the node that followed the chain live; the restarted decision models
// decide as the old ones would have.
func TestMissionReplayEqualsLive(t *testing.T) {
	dir := t.TempDir()
	onDisk := func(o *eventlog.Options) { o.InMemory, o.Dir = false, dir }
	w := newMissionWorldOn(t, newCivNodeWith(t, onDisk))
	ids := missionActivity(t, w)
	slugs := []string{"pub", "ada", "bob", "clerk"}
	live := missionSnapshot(t, w.testNode, ids, slugs)

	w.rebuildInPlace(t)
	compareSnapshots(t, "rebuilt in place", live, missionSnapshot(t, w.testNode, ids, slugs))

	if err := w.log.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := newCivNodeWith(t, onDisk)
	compareSnapshots(t, "restarted", live, missionSnapshot(t, restarted.testNode, ids, slugs))

	// Decisions after the restart see the missions' states.
	rw := &missionWorld{civNode: restarted, dids: w.dids, tokens: map[string]string{"pub": restarted.agentToken("pub"),
		"ada": restarted.agentToken("ada"), "bob": restarted.agentToken("bob")}}
	var rec missionRec
	restarted.get("/v1/core/missions/"+ids[1]).wantOK(t, &rec) // claimed by bob, completed, not settled
	if rec.State != "completed" {
		t.Fatalf("mission 1 is %s", rec.State)
	}
	tip := restarted.log.Tip().Seq
	rw.refused(t, rw.step(ids[1], "claim", rw.tokens["ada"], map[string]any{"claimer": "ada"}), tip, 409, "invalid_state", "")
	rw.refused(t, rw.step(ids[0], "settle", testToken, map[string]any{}), tip, 409, "invalid_state", "")
	rw.step(ids[1], "settle", rw.tokens["pub"], map[string]any{}).wantOK(t, nil)
	rw.step(ids[6], "claim", rw.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
}
