package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
)

// TestServeMissionsSurviveRestart: a mission published and taken through its
// lifecycle on a running node reads the same after a restart, and replay prints
// the rebuilt mission models.
func TestServeMissionsSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	post := func(path string, body any, v any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, n.url+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+n.token)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		if v != nil {
			json.Unmarshal(b, v)
		}
	}
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	post("/v1/civilization/bootstrap-identity", map[string]any{"display_name": "Ada", "public_id": "ada", "role": "enforcer"}, &ada)
	post("/v1/civilization/controller-binding", map[string]any{"agent_did": ada.AgentDID, "controller_kind": "local_model", "controller_ref": "r"}, nil)
	var m struct {
		MissionID string `json:"mission_id"`
	}
	post("/v1/core/missions", map[string]any{"title": "Survey", "description": "Survey the belt.", "publisher": "genesis",
		"publisher_kind": "planetary_government", "domain": "research", "subnet_id": "genesis", "required_role": "enforcer",
		"reward": map[string]int{"agent_credit": 7, "reputation": 1, "capacity": 0, "treasury_share_credit": 2}}, &m)
	post("/v1/core/missions/"+m.MissionID+"/claim", map[string]any{"claimer": "ada"}, nil)
	post("/v1/core/missions/"+m.MissionID+"/complete", map[string]any{"result": "surveyed"}, nil)
	post("/v1/core/missions/"+m.MissionID+"/settle", map[string]any{}, nil)
	before := getJSON(t, n.url+"/v1/core/missions/"+m.MissionID, n.token, 200, nil)
	state := getJSON(t, n.url+"/v1/state", n.token, 200, nil)
	n.stop(t)

	n = startNode(t, dir)
	if after := getJSON(t, n.url+"/v1/core/missions/"+m.MissionID, n.token, 200, nil); !bytes.Equal(before, after) {
		t.Errorf("after restart:\n %s\n want %s", after, before)
	}
	var st struct {
		Balance json.RawMessage `json:"balance"`
	}
	json.Unmarshal(getJSON(t, n.url+"/v1/state", n.token, 200, nil), &st)
	var was struct {
		Balance json.RawMessage `json:"balance"`
	}
	json.Unmarshal(state, &was)
	if string(st.Balance) != `{"credit":2,"reputation":0,"capacity":0}` || string(st.Balance) != string(was.Balance) {
		t.Errorf("balance %s, before the restart %s", st.Balance, was.Balance)
	}
	n.stop(t)

	res := runCLI(t, nil, "replay", "--data-dir", dir)
	want := regexp.MustCompile(`(?m)^missions +1\nmissions_open +0\nmissions_settled +1\ncredits_paid +7\ntreasury_credits +2\nmissions_skipped +0$`)
	if res.code != 0 || !want.MatchString(res.stdout) {
		t.Errorf("replay: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}
