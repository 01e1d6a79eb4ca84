package main

import (
	"encoding/json"
	"net/http"
	"testing"
)

// survey is the scenario the tests of a running node build on: Ada, an
// enforcer bound to a local model, and missions titled Survey published by
// genesis for an enforcer (7 credits, 1 reputation, 2 to the treasury),
// which she claims, completes and has settled.
type survey struct {
	t          *testing.T
	url, token string
}

// newSurvey bootstraps Ada on the node at url and binds her to a local
// model.
func newSurvey(t *testing.T, url, token string) *survey {
	t.Helper()
	s := &survey{t: t, url: url, token: token}
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	s.post("/v1/civilization/bootstrap-identity", map[string]any{"display_name": "Ada", "public_id": "ada", "role": "enforcer"}, &ada)
	s.post("/v1/civilization/controller-binding", map[string]any{"agent_did": ada.AgentDID, "controller_kind": "local_model", "controller_ref": "r"}, nil)
	return s
}

// publish creates a mission titled title and returns its id.
func (s *survey) publish(title string) string {
	s.t.Helper()
	var m struct {
		MissionID string `json:"mission_id"`
	}
	s.post("/v1/core/missions", map[string]any{"title": title, "description": "Survey the belt.", "publisher": "genesis",
		"publisher_kind": "planetary_government", "domain": "research", "subnet_id": "genesis", "required_role": "enforcer",
		"reward": map[string]int{"agent_credit": 7, "reputation": 1, "capacity": 0, "treasury_share_credit": 2}}, &m)
	return m.MissionID
}

// claim has Ada claim mission id.
func (s *survey) claim(id string) {
	s.t.Helper()
	s.post("/v1/core/missions/"+id+"/claim", map[string]any{"claimer": "ada"}, nil)
}

// complete completes mission id with result.
func (s *survey) complete(id, result string) {
	s.t.Helper()
	s.post("/v1/core/missions/"+id+"/complete", map[string]any{"result": result}, nil)
}

// settle settles mission id.
func (s *survey) settle(id string) {
	s.t.Helper()
	s.post("/v1/core/missions/"+id+"/settle", map[string]any{}, nil)
}

// post sends body to path with the owner token; anything but a 200 fails
// the test. The answer is decoded into v unless v is nil.
func (s *survey) post(path string, body, v any) {
	s.t.Helper()
	code, b := msPost(s.t, s.url, s.token, path, body)
	if code != http.StatusOK {
		s.t.Fatalf("POST %s: %d %.300s", path, code, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			s.t.Fatalf("POST %s: decode %.300s: %v", path, b, err)
		}
	}
}
