package http

import (
	"net/http"
	"testing"
)

// missionWorld is a node with the cast of the mission tests: a publishing
// organization, eligible and ineligible claimers, each with an agent token.
type missionWorld struct {
	*civNode
	dids   map[string]string // public_id → agent_did
	tokens map[string]string // public_id → agent token
}

// newMissionWorld bootstraps:
//   - pub: an organization that publishes, bound and with an agent token;
//   - ada, bob: enforcers of the order, actively bound — eligible for the default mission;
//   - unbound: an order enforcer without a binding;
//   - idle: an order enforcer whose binding is inactive;
//   - clerk: an order archivist (wrong role);
//   - rover: a frontier enforcer (wrong faction).
func newMissionWorld(t *testing.T) *missionWorld {
	t.Helper()
	return newMissionWorldOn(t, newCivNode(t))
}

// newMissionWorldOn bootstraps the cast on n.
func newMissionWorldOn(t *testing.T, n *civNode) *missionWorld {
	t.Helper()
	w := &missionWorld{civNode: n, dids: map[string]string{}, tokens: map[string]string{}}
	for _, c := range []struct {
		slug, faction, role string
		binding             string // "active", "inactive" or ""
	}{
		{"pub", "order", "broker", "active"},
		{"ada", "order", "enforcer", "active"},
		{"bob", "order", "enforcer", "active"},
		{"unbound", "order", "enforcer", ""},
		{"idle", "order", "enforcer", "inactive"},
		{"clerk", "order", "archivist", "active"},
		{"rover", "frontier", "enforcer", "active"},
	} {
		w.addAgent(c.slug, c.faction, c.role, c.binding)
	}
	return w
}

// addAgent bootstraps one identity with a profile, a binding and an agent token.
func (w *missionWorld) addAgent(slug, faction, role, binding string) {
	w.t.Helper()
	did, _ := w.bootstrap(map[string]any{"display_name": "Agent " + slug, "public_id": slug, "faction": faction, "role": role})
	w.dids[slug] = did
	if binding != "" {
		w.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
			"controller_kind": "local_model", "controller_ref": "ctl-" + slug, "active": binding == "active"}).wantOK(w.t, nil)
	}
	w.tokens[slug] = w.agentToken(slug)
}

// missionBody is a valid create body published by pub, edited by edits (a nil
// value deletes the key).
func missionBody(edits map[string]any) map[string]any {
	b := map[string]any{
		"title": "Escort the convoy", "description": "Escort the ore convoy from the dock to the refinery.",
		"publisher": "pub", "publisher_kind": "organization", "domain": "security", "subnet_id": "genesis",
		"zone_id": "dock", "required_role": "enforcer", "required_faction": "order",
		"reward":  map[string]any{"agent_credit": 25, "reputation": 3, "capacity": 1, "treasury_share_credit": 5},
		"payload": map[string]any{"route": []string{"dock", "refinery"}, "escorts": 2},
	}
	for k, v := range edits {
		if v == nil {
			delete(b, k)
			continue
		}
		b[k] = v
	}
	return b
}

// missionRec is the part of a mission record the tests read.
type missionRec struct {
	MissionID   string         `json:"mission_id"`
	State       string         `json:"state"`
	Publisher   string         `json:"publisher"`
	SubnetID    string         `json:"subnet_id"`
	Domain      string         `json:"domain"`
	Claimer     *string        `json:"claimer"`
	Result      *string        `json:"result"`
	Reward      map[string]int `json:"reward"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
	ClaimedAt   *string        `json:"claimed_at"`
	CompletedAt *string        `json:"completed_at"`
	SettledAt   *string        `json:"settled_at"`
}

// create publishes a mission with token and returns its record.
func (w *missionWorld) create(token string, edits map[string]any) missionRec {
	w.t.Helper()
	var rec missionRec
	w.civSend(http.MethodPost, "/v1/core/missions", token, missionBody(edits)).wantOK(w.t, &rec)
	return rec
}

// step posts a lifecycle step (claim, complete, settle) and returns the response.
func (w *missionWorld) step(id, action, token string, body any) response {
	w.t.Helper()
	return w.civSend(http.MethodPost, "/v1/core/missions/"+id+"/"+action, token, body)
}

// advance takes a fresh mission of pub's, claimed by ada, to state.
func (w *missionWorld) advance(state string) missionRec {
	w.t.Helper()
	rec := w.create(w.tokens["pub"], nil)
	for _, s := range []struct {
		state, action, token string
		body                 any
	}{
		{"claimed", "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}},
		{"completed", "complete", w.tokens["ada"], map[string]any{"result": "done"}},
		{"settled", "settle", w.tokens["pub"], map[string]any{}},
	} {
		if rec.State == state {
			break
		}
		w.step(rec.MissionID, s.action, s.token, s.body).wantOK(w.t, &rec)
	}
	if rec.State != state {
		w.t.Fatalf("mission is %s, want %s", rec.State, state)
	}
	return rec
}

// refused checks an error response and that the chain did not move.
func (w *missionWorld) refused(t *testing.T, r response, tip uint64, status int, code, field string) {
	t.Helper()
	r.wantError(t, status, code, field)
	if got := w.log.Tip().Seq; got != tip {
		t.Errorf("tip moved from %d to %d on a refused request (%d %s)", tip, got, status, code)
	}
}

func reward(credit, rep, capacity, share int) map[string]any {
	return map[string]any{"agent_credit": credit, "reputation": rep, "capacity": capacity, "treasury_share_credit": share}
}
