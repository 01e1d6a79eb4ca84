package http

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// TestSettlementPastBalanceBound: a settlement that would take a balance,
// treasury or total past 2^53-1 is 409 balance_overflow, the tip does not move
// and the mission stays completed.
func TestSettlementPastBalanceBound(t *testing.T) {
	w := newMissionWorld(t)
	// Reaching the bound through the API takes some 9,000 settlements of the
	// largest reward; the chain starts instead with one mission, appended as is,
	// whose reward takes ada's credit to 30 below the bound.
	big := uuid.NewString()
	if _, err := w.log.Append(context.Background(), eventlog.Draft{Type: events.TypeMissionCreated, Payload: events.MissionCreated{
		MissionID: big, Title: "Haul", Description: "Haul the treasury.", Publisher: "pub",
		PublisherKind: events.PublisherOrganization, IssuerDID: w.dids["pub"], Domain: "trade", SubnetID: "genesis",
		Reward: events.Reward{AgentCredit: commands.MaxBalance - 30}, Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	w.step(big, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
	w.step(big, "complete", w.tokens["ada"], map[string]any{"result": "done"}).wantOK(t, nil)
	w.step(big, "settle", w.tokens["pub"], map[string]any{}).wantOK(t, nil)

	// 26 agent credit and 5 treasury share make 31 credits: one more than fits.
	over := w.create(w.tokens["pub"], map[string]any{"reward": reward(26, 0, 0, 5)})
	w.step(over.MissionID, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
	w.step(over.MissionID, "complete", w.tokens["ada"], map[string]any{"result": "done"}).wantOK(t, nil)
	before := w.get("/v1/core/missions/"+over.MissionID).wantOK(t, nil).body
	stats := w.get("/v1/civilization/public-identity?public_id=ada").wantOK(t, nil).body
	r := w.step(over.MissionID, "settle", w.tokens["pub"], map[string]any{})
	w.refused(t, r, w.log.Tip().Seq, http.StatusConflict, "balance_overflow", "")
	if !strings.Contains(string(r.body), "9007199254740991") {
		t.Errorf("refusal %s does not state the bound", r.body)
	}
	if after := w.get("/v1/core/missions/"+over.MissionID).wantOK(t, nil).body; string(after) != string(before) {
		t.Errorf("refused mission changed:\n %s\n %s", before, after)
	}
	if after := w.get("/v1/civilization/public-identity?public_id=ada").wantOK(t, nil).body; string(after) != string(stats) {
		t.Errorf("ada changed on a refused settlement:\n %s\n %s", stats, after)
	}

	// One that lands on the bound exactly is paid, and every figure stays exact.
	exact := w.create(w.tokens["pub"], map[string]any{"reward": reward(25, 0, 0, 5)})
	w.step(exact.MissionID, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
	w.step(exact.MissionID, "complete", w.tokens["ada"], map[string]any{"result": "done"}).wantOK(t, nil)
	w.step(exact.MissionID, "settle", w.tokens["pub"], map[string]any{}).wantOK(t, nil)
	var ada struct {
		Stats struct {
			Credit json.Number `json:"credit"`
		} `json:"stats"`
	}
	w.get("/v1/civilization/public-identity?public_id=ada").wantOK(t, &ada)
	if ada.Stats.Credit != "9007199254740986" { // the bound less the 5 that went to the treasury
		t.Errorf("ada's credit = %s, want 9007199254740986", ada.Stats.Credit)
	}
}

// TestRewardAboveBoundAtCreate: a reward field above 10^12, and so any above
// the balance bound, is refused when the mission is created.
func TestRewardAboveBoundAtCreate(t *testing.T) {
	w := newMissionWorld(t)
	for _, v := range []string{"1000000000001", "9007199254740991", "9007199254740993", "1e300"} {
		body := missionBody(nil)
		body["reward"] = map[string]any{"agent_credit": json.Number(v), "reputation": 0, "capacity": 0, "treasury_share_credit": 0}
		w.refused(t, w.civSend(http.MethodPost, "/v1/core/missions", w.tokens["pub"], body), w.log.Tip().Seq,
			http.StatusBadRequest, "invalid_field", "reward.agent_credit")
	}
}
