package http

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// TestConcurrentClaimsOfOneMission: sixteen eligible agents, each with its own
// token, claim one mission at once; exactly one gets 200, the rest 409
// already_claimed, and the chain holds one claim.
func TestConcurrentClaimsOfOneMission(t *testing.T) {
	w := newMissionWorld(t)
	slugs := make([]string, 16)
	for i := range slugs {
		slugs[i] = fmt.Sprintf("racer-%d", i)
		w.addAgent(slugs[i], "order", "enforcer", "active")
	}
	m := w.create(testToken, nil)
	statuses := race(t, 16, func(i int) response {
		return w.step(m.MissionID, "claim", w.tokens[slugs[i]], map[string]any{"claimer": slugs[i]})
	}, "already_claimed")
	if statuses[http.StatusOK] != 1 || statuses[http.StatusConflict] != 15 {
		t.Fatalf("statuses %v; want one 200 and fifteen 409", statuses)
	}
	_, claims, err := w.log.Query(eventlog.Query{Type: "mission.accepted", Limit: 1})
	if err != nil || claims != 1 {
		t.Fatalf("%d claims on the chain (%v)", claims, err)
	}
	var rec missionRec
	w.get("/v1/core/missions/"+m.MissionID).wantOK(t, &rec)
	if rec.State != "claimed" || rec.Claimer == nil {
		t.Fatalf("record = %+v", rec)
	}

	// The winner completes; sixteen settlements race (the owner governs genesis
	// and acts for the publisher): one pays.
	w.step(m.MissionID, "complete", w.tokens[*rec.Claimer], map[string]any{"result": "won"}).wantOK(t, nil)
	statuses = race(t, 16, func(i int) response {
		token := testToken
		if i%2 == 0 {
			token = w.tokens["pub"]
		}
		return w.step(m.MissionID, "settle", token, map[string]any{})
	}, "invalid_state")
	if statuses[http.StatusOK] != 1 || statuses[http.StatusConflict] != 15 {
		t.Fatalf("settle statuses %v; want one 200 and fifteen 409", statuses)
	}
	_, pays, _ := w.log.Query(eventlog.Query{Type: "payment.settled", Limit: 1})
	var id struct {
		Stats map[string]int `json:"stats"`
	}
	w.get("/v1/civilization/public-identity?public_id="+*rec.Claimer).wantOK(t, &id)
	if pays != 1 || id.Stats["credit"] != 25 || id.Stats["missions_completed"] != 1 {
		t.Errorf("%d payments, winner's stats %v", pays, id.Stats)
	}
}
