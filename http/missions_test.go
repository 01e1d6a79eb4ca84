package http

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

var missionKeys = []string{"mission_id", "title", "description", "state", "publisher", "publisher_kind", "domain",
	"subnet_id", "zone_id", "required_role", "required_faction", "reward", "payload", "claimer", "result",
	"created_at", "updated_at", "claimed_at", "completed_at", "settled_at"}

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestMissionLifecycle drives one mission through created, claimed, completed
// and settled over HTTP, as a publisher and an agent would, and checks every
// record, the events on the chain, the payment and every view that shows it.
func TestMissionLifecycle(t *testing.T) {
	w := newMissionWorld(t)
	pub, ada := w.tokens["pub"], w.tokens["ada"]

	// Create, by the publisher's own agent token.
	r := w.civSend(http.MethodPost, "/v1/core/missions", pub, missionBody(nil)).wantOK(t, nil)
	wantKeyOrder(t, "mission", r.body, missionKeys)
	var created map[string]json.RawMessage
	r.decode(t, &created)
	var id, createdAt string
	json.Unmarshal(created["mission_id"], &id)
	json.Unmarshal(created["created_at"], &createdAt)
	if !uuidV7.MatchString(id) {
		t.Fatalf("mission_id %q is not a UUIDv7", id)
	}
	want := `{"mission_id":"` + id + `","title":"Escort the convoy","description":"Escort the ore convoy from the dock to the refinery.",` +
		`"state":"created","publisher":"pub","publisher_kind":"organization","domain":"security","subnet_id":"genesis",` +
		`"zone_id":"dock","required_role":"enforcer","required_faction":"order",` +
		`"reward":{"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5},` +
		`"payload":{"escorts":2,"route":["dock","refinery"]},"claimer":null,"result":null,` +
		`"created_at":"` + createdAt + `","updated_at":"` + createdAt + `","claimed_at":null,"completed_at":null,"settled_at":null}` + "\n"
	if string(r.body) != want {
		t.Fatalf("created %s\n want %s", r.body, want)
	}
	// Read your write: the same record by id, in the list and in /my.
	if got := w.get("/v1/core/missions/"+id).wantOK(t, nil); string(got.body) != want {
		t.Errorf("GET by id %s", got.body)
	}
	var list struct {
		Missions   []json.RawMessage `json:"missions"`
		NextCursor *string           `json:"next_cursor"`
	}
	lr := w.get("/v1/core/missions").wantOK(t, &list)
	wantKeyOrder(t, "list", lr.body, []string{"missions", "next_cursor"})
	if len(list.Missions) != 1 || string(list.Missions[0])+"\n" != want || list.NextCursor != nil {
		t.Errorf("list %s", lr.body)
	}
	home := func(slug string) []missionRec {
		t.Helper()
		var h struct {
			ActiveMissions []missionRec `json:"active_missions"`
		}
		w.get("/v1/supervision/home?public_id="+slug).wantOK(t, &h)
		return h.ActiveMissions
	}
	if a := home("pub"); len(a) != 1 || a[0].MissionID != id {
		t.Errorf("pub's active missions = %+v", a)
	}

	// Claim, by ada's agent token.
	var claimed missionRec
	w.step(id, "claim", ada, map[string]any{"claimer": "ada"}).wantOK(t, &claimed)
	if claimed.State != "claimed" || claimed.Claimer == nil || *claimed.Claimer != "ada" || claimed.ClaimedAt == nil ||
		claimed.UpdatedAt != *claimed.ClaimedAt || claimed.CompletedAt != nil || claimed.CreatedAt != createdAt {
		t.Fatalf("claimed = %+v", claimed)
	}
	if a := home("ada"); len(a) != 1 || a[0].State != "claimed" {
		t.Errorf("ada's active missions = %+v", a)
	}
	// Complete, by ada's token, with JSON as text.
	var completed missionRec
	w.step(id, "complete", ada, map[string]any{"result": `{"delivered":true}`}).wantOK(t, &completed)
	if completed.State != "completed" || completed.Result == nil || *completed.Result != `{"delivered":true}` ||
		completed.CompletedAt == nil || *completed.ClaimedAt != *claimed.ClaimedAt {
		t.Fatalf("completed = %+v", completed)
	}
	// Settle, by the publisher's token.
	var settled missionRec
	w.step(id, "settle", pub, map[string]any{}).wantOK(t, &settled)
	if settled.State != "settled" || settled.SettledAt == nil || settled.UpdatedAt != *settled.SettledAt {
		t.Fatalf("settled = %+v", settled)
	}
	if a := home("ada"); len(a) != 0 {
		t.Errorf("ada still has active missions %+v", a)
	}
	if a := home("pub"); len(a) != 0 {
		t.Errorf("pub still has active missions %+v", a)
	}

	// The chain holds the five events with the documented payloads.
	evs, _, err := w.log.Query(eventlog.Query{Type: "mission.*", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	pays, _, _ := w.log.Query(eventlog.Query{Type: "payment.settled", Limit: 10})
	if len(evs) != 4 || len(pays) != 1 || pays[0].Seq != evs[3].Seq+1 {
		t.Fatalf("%d mission events, %d payments", len(evs), len(pays))
	}
	adaDID, pubDID := w.dids["ada"], w.dids["pub"]
	rw := `{"agent_credit":25,"capacity":1,"reputation":3,"treasury_share_credit":5}`
	for i, want := range []string{
		`{"description":"Escort the ore convoy from the dock to the refinery.","domain":"security","issuer_did":"` + pubDID +
			`","mission_id":"` + id + `","payload":{"escorts":2,"route":["dock","refinery"]},"publisher":"pub","publisher_kind":"organization",` +
			`"required_faction":"order","required_role":"enforcer","reward":` + rw + `,"subnet_id":"genesis","title":"Escort the convoy","zone_id":"dock"}`,
		`{"claimer":"ada","claimer_did":"` + adaDID + `","issuer_did":"` + pubDID + `","mission_id":"` + id + `","reward":` + rw + `}`,
		`{"claimer":"ada","mission_id":"` + id + `","result":"{\"delivered\":true}"}`,
		`{"mission_id":"` + id + `","reward":` + rw + `,"settled_by":"` + pubDID + `"}`,
	} {
		if string(evs[i].Payload) != want {
			t.Errorf("%s payload %s\n want %s", evs[i].Type, evs[i].Payload, want)
		}
	}
	wantPay := `{"agent_credit":25,"capacity":1,"mission_id":"` + id + `","reputation":3,"to":"ada","to_did":"` + adaDID +
		`","treasury":"genesis","treasury_share_credit":5}`
	if string(pays[0].Payload) != wantPay {
		t.Errorf("payment %s\n want %s", pays[0].Payload, wantPay)
	}

	// Credits: ada's stats, the genesis treasury in the node's balance (it
	// governs genesis), metrics and briefings.
	var rec struct {
		Stats map[string]int `json:"stats"`
	}
	w.get("/v1/civilization/public-identity?public_id=ada").wantOK(t, &rec)
	if rec.Stats["credit"] != 25 || rec.Stats["reputation"] != 3 || rec.Stats["capacity"] != 1 || rec.Stats["missions_completed"] != 1 {
		t.Errorf("ada's stats = %v", rec.Stats)
	}
	var state struct {
		Balance json.RawMessage `json:"balance"`
	}
	w.get("/v1/state").wantOK(t, &state)
	if string(state.Balance) != `{"credit":5,"reputation":0,"capacity":0}` {
		t.Errorf("state balance = %s", state.Balance)
	}
	var metrics struct {
		StatsTotals map[string]int  `json:"stats_totals"`
		Missions    json.RawMessage `json:"missions"`
	}
	w.get("/v1/civilization/metrics").wantOK(t, &metrics)
	if metrics.StatsTotals["credit"] != 25 || string(metrics.Missions) != `{"total":1,"by_state":{"claimed":0,"completed":0,"created":0,"settled":1},`+
		`"paid":{"settlements":1,"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5},"treasuries":{"genesis":5}}` {
		t.Errorf("metrics = %v %s", metrics.StatsTotals, metrics.Missions)
	}
	for _, path := range []string{"/v1/civilization/briefing", "/v1/supervision/briefing?hours=1"} {
		var b struct {
			Counts  map[string]int  `json:"counts"`
			Credits json.RawMessage `json:"credits"`
		}
		w.get(path).wantOK(t, &b)
		if b.Counts["mission.created"] != 1 || b.Counts["mission.settled"] != 1 || b.Counts["payment.settled"] != 1 ||
			string(b.Credits) != `{"settlements":1,"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5}` {
			t.Errorf("%s: counts %v credits %s", path, b.Counts, b.Credits)
		}
	}
	// Ada's recent events show the claim and the payment.
	var h struct {
		RecentEvents []struct {
			Type string `json:"type"`
		} `json:"recent_events"`
	}
	w.get("/v1/supervision/home?public_id=ada").wantOK(t, &h)
	if n := len(h.RecentEvents); n < 2 || h.RecentEvents[n-2].Type != "mission.accepted" || h.RecentEvents[n-1].Type != "payment.settled" {
		t.Errorf("ada's recent events = %+v", h.RecentEvents)
	}

	// /my: ada claimed it, pub published it.
	var my struct {
		Claimed   []missionRec `json:"claimed"`
		Published []missionRec `json:"published"`
	}
	mr := w.civSend(http.MethodGet, "/v1/core/missions/my?public_id=ada", ada, nil).wantOK(t, &my)
	wantKeyOrder(t, "my", mr.body, []string{"claimed", "published"})
	if len(my.Claimed) != 1 || my.Claimed[0].State != "settled" || len(my.Published) != 0 {
		t.Errorf("ada's missions = %s", mr.body)
	}
	w.get("/v1/core/missions/my?public_id=pub").wantOK(t, &my)
	if len(my.Claimed) != 0 || len(my.Published) != 1 || my.Published[0].MissionID != id {
		t.Errorf("pub's missions = %+v", my)
	}

	// Supervision: the internal fields name the chain's events.
	var sup struct {
		Missions []struct {
			IssuerDID   string   `json:"issuer_did"`
			ClaimerDID  string   `json:"claimer_did"`
			SettledBy   string   `json:"settled_by"`
			LastEventID string   `json:"last_event_id"`
			EventIDs    []string `json:"event_ids"`
			Version     int      `json:"version"`
		} `json:"missions"`
	}
	sr := w.get("/v1/supervision/missions").wantOK(t, &sup)
	if len(sup.Missions) != 1 {
		t.Fatalf("supervision = %s", sr.body)
	}
	sm := sup.Missions[0]
	wantIDs := []string{evs[0].ID, evs[1].ID, evs[2].ID, evs[3].ID, pays[0].ID}
	if sm.Version != 5 || strings.Join(sm.EventIDs, ",") != strings.Join(wantIDs, ",") || sm.LastEventID != pays[0].ID ||
		sm.IssuerDID != pubDID || sm.ClaimerDID != adaDID || sm.SettledBy != pubDID {
		t.Errorf("supervised = %+v", sm)
	}
	var raw struct {
		Missions json.RawMessage `json:"missions"`
	}
	json.Unmarshal(sr.body, &raw)
	var first []json.RawMessage
	json.Unmarshal(raw.Missions, &first)
	wantKeyOrder(t, "supervised mission", first[0], append(append([]string{}, missionKeys...),
		"issuer_did", "claimer_did", "settled_by", "last_event_id", "event_ids", "version"))

	// Settled is final.
	tip := w.log.Tip().Seq
	w.refused(t, w.step(id, "settle", pub, map[string]any{}), tip, http.StatusConflict, "invalid_state", "")
	w.refused(t, w.step(id, "claim", w.tokens["bob"], map[string]any{"claimer": "bob"}), tip, http.StatusConflict, "invalid_state", "")
	w.refused(t, w.step(id, "complete", ada, map[string]any{"result": "again"}), tip, http.StatusConflict, "invalid_state", "")
}

// TestMissionPublishedBySubnet: the owner publishes for a subnet it governs as
// planetary_government; the node DID is the issuer and settles it.
func TestMissionPublishedBySubnet(t *testing.T) {
	w := newMissionWorld(t)
	rec := w.create(testToken, map[string]any{"publisher": "genesis", "publisher_kind": "planetary_government",
		"required_faction": nil, "zone_id": nil, "payload": nil})
	var full map[string]json.RawMessage
	w.get("/v1/core/missions/"+rec.MissionID).wantOK(t, &full)
	if string(full["required_faction"]) != "null" || string(full["zone_id"]) != "null" || string(full["payload"]) != "{}" {
		t.Errorf("record = %v", full)
	}
	w.step(rec.MissionID, "claim", w.tokens["rover"], map[string]any{"claimer": "rover"}).wantOK(t, nil)
	w.step(rec.MissionID, "complete", w.tokens["rover"], map[string]any{"result": "ok"}).wantOK(t, nil)
	// An agent token is neither the subnet's publisher nor its governance actor.
	tip := w.log.Tip().Seq
	w.refused(t, w.step(rec.MissionID, "settle", w.tokens["pub"], map[string]any{}), tip, http.StatusForbidden, "forbidden", "")
	w.step(rec.MissionID, "settle", testToken, map[string]any{}).wantOK(t, nil)
	evs, _, _ := w.log.Query(eventlog.Query{Type: "mission.created", Limit: 1})
	settledEv, _, _ := w.log.Query(eventlog.Query{Type: "mission.settled", Limit: 1})
	node := w.log.NodeDID()
	if !strings.Contains(string(evs[0].Payload), `"issuer_did":"`+node+`"`) ||
		!strings.Contains(string(settledEv[0].Payload), `"settled_by":"`+node+`"`) {
		t.Errorf("created %s settled %s", evs[0].Payload, settledEv[0].Payload)
	}
	var my struct {
		Claimed []missionRec `json:"claimed"`
	}
	w.get("/v1/core/missions/my?public_id=rover").wantOK(t, &my)
	if len(my.Claimed) != 1 {
		t.Errorf("rover claimed %+v", my.Claimed)
	}
}

// TestMissionRoutes: /my and /{mission_id} share a position in the route table
// without conflict.
func TestMissionRoutes(t *testing.T) {
	w := newMissionWorld(t)
	rec := w.create(testToken, nil)
	w.get("/v1/core/missions/"+rec.MissionID).wantOK(t, nil)
	w.get("/v1/core/missions/my?public_id=pub").wantOK(t, nil)
	w.get("/v1/core/missions/my").wantError(t, http.StatusBadRequest, "missing_field", "public_id")
	w.get("/v1/core/missions/my?public_id=nobody").wantError(t, http.StatusNotFound, "identity_not_found", "public_id")
	w.get("/v1/core/missions/my?public_id=pub&limit=0").wantError(t, http.StatusBadRequest, "invalid_field", "limit")
	w.civSend(http.MethodGet, "/v1/core/missions/my?public_id=pub", w.tokens["ada"], nil).wantError(t, http.StatusForbidden, "forbidden", "")
	w.get("/v1/core/missions/019b0000-0000-7000-8000-000000000000").wantError(t, http.StatusNotFound, "mission_not_found", "")
	w.get("/v1/core/missions/not-a-uuid").wantError(t, http.StatusNotFound, "mission_not_found", "")
	tip := w.log.Tip().Seq
	for _, action := range []string{"claim", "complete", "settle"} {
		body := map[string]any{"claimer": "ada"}
		if action == "complete" {
			body = map[string]any{"result": "x"}
		} else if action == "settle" {
			body = map[string]any{}
		}
		w.refused(t, w.step("019b0000-0000-7000-8000-000000000000", action, testToken, body), tip, http.StatusNotFound, "mission_not_found", "")
		w.refused(t, w.step("my", action, testToken, body), tip, http.StatusNotFound, "mission_not_found", "")
	}
	r := w.civSend(http.MethodPost, "/v1/core/missions/my", testToken, map[string]any{})
	r.wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
	if got := r.header.Get("Allow"); got != "GET, HEAD, OPTIONS" {
		t.Errorf("Allow = %q", got)
	}
	w.civSend(http.MethodDelete, "/v1/core/missions/"+rec.MissionID, testToken, nil).wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
	w.civSend(http.MethodGet, "/v1/core/missions/"+rec.MissionID+"/claim", testToken, nil).wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
}

// TestMissionWriteAnswersAsRead holds each mission write's answer, which is the
// record its own fold produced (writtenMission), to the bytes a GET of the
// mission returns right after it: one record, whichever way it is read.
func TestMissionWriteAnswersAsRead(t *testing.T) {
	w := newMissionWorld(t)
	pub, ada := w.tokens["pub"], w.tokens["ada"]
	r := w.civSend(http.MethodPost, "/v1/core/missions", pub, missionBody(nil)).wantOK(t, nil)
	var rec missionRec
	r.decode(t, &rec)
	same := func(step string, r response) {
		t.Helper()
		if got := w.get("/v1/core/missions/"+rec.MissionID).wantOK(t, nil); string(got.body) != string(r.body) {
			t.Errorf("%s answered %s\nGET returns %s", step, r.body, got.body)
		}
	}
	same("create", r)
	same("claim", w.step(rec.MissionID, "claim", ada, map[string]any{"claimer": "ada"}).wantOK(t, nil))
	same("complete", w.step(rec.MissionID, "complete", ada, map[string]any{"result": `{"delivered":true,"note":"<&>"}`}).wantOK(t, nil))
	same("settle", w.step(rec.MissionID, "settle", pub, map[string]any{}).wantOK(t, nil))
}
