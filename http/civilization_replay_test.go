package http

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// civActivity drives a node through many identity operations: bootstraps with and
// without profiles, generated and given slugs, slug changes, bindings that are
// exclusive, shared, inactive and moved, profile changes, by the owner and by
// agent tokens. It returns the public ids.
func civActivity(t *testing.T, n *civNode) []string {
	t.Helper()
	factions := []string{"freeport", "order", "frontier"}
	roles := []string{"broker", "operator", "enforcer", "archivist"}
	var slugs []string
	var dids []string
	for i := range 24 {
		body := map[string]any{"display_name": fmt.Sprintf("Citizen %d", i%5)}
		if i%2 == 0 {
			body["faction"] = factions[i%3]
			body["role"] = roles[i%4]
			body["home_subnet_id"] = fmt.Sprintf("subnet-%d", i%3)
		}
		if i%7 == 0 {
			body["public_id"] = fmt.Sprintf("given-%d", i)
		}
		did, slug := n.bootstrap(body)
		dids, slugs = append(dids, did), append(slugs, slug)
	}
	for i, did := range dids {
		switch i % 4 {
		case 0:
			n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
				"controller_kind": "local_model", "controller_ref": fmt.Sprintf("gpu-%d", i)}).wantOK(t, nil)
		case 1:
			n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
				"controller_kind": "remote_orchestrator", "controller_ref": "shared-orch", "ownership_scope": "shared"}).wantOK(t, nil)
		case 2:
			n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
				"controller_kind": "human_operator", "controller_ref": "desk", "active": false, "node_id": "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"}).wantOK(t, nil)
		}
		if i%3 == 0 {
			slugs[i] = fmt.Sprintf("renamed-%d", i)
			n.civPost("/v1/civilization/public-identity", map[string]any{"agent_did": did, "display_name": "Renamed",
				"public_id": slugs[i], "capabilities_granted": []string{"missions.claim"},
				"subnet_memberships": []string{"subnet-1", "outer"}, "model_provider": "local"}).wantOK(t, nil)
		}
		if i%5 == 0 {
			tok := n.agentToken(slugs[i])
			n.civSend(http.MethodPost, "/v1/civilization/profile", tok, map[string]any{"agent_did": did,
				"strategy": "cooperative", "home_subnet_id": "genesis", "home_zone_id": "dock"}).wantOK(t, nil)
		}
	}
	// A binding moved from one ref to another frees the first.
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": dids[0],
		"controller_kind": "local_model", "controller_ref": "gpu-moved"}).wantOK(t, nil)
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": dids[3],
		"controller_kind": "local_model", "controller_ref": "gpu-0"}).wantOK(t, nil)
	return slugs
}

// civSnapshot answers every identity query of the API for slugs, in a fixed
// order: each path with its status and body.
func civSnapshot(t *testing.T, n *testNode, slugs []string) []string {
	t.Helper()
	var out []string
	get := func(path string) response {
		r := n.get(path)
		out = append(out, fmt.Sprintf("GET %s → %d %s", path, r.status, r.body))
		return r
	}
	for _, list := range []string{"/v1/civilization/identities?limit=5", "/v1/supervision/identities?limit=4"} {
		path := list
		for {
			var page struct {
				NextCursor *string `json:"next_cursor"`
			}
			get(path).wantOK(t, &page)
			if page.NextCursor == nil {
				break
			}
			path = list + "&cursor=" + *page.NextCursor
		}
	}
	get("/v1/civilization/metrics")
	for _, slug := range slugs {
		var rec struct {
			AgentDID string `json:"agent_did"`
		}
		get("/v1/civilization/public-identity?public_id="+slug).wantOK(t, &rec)
		did := url.QueryEscape(rec.AgentDID)
		get("/v1/civilization/public-identity?agent_did=" + did)
		get("/v1/civilization/controller-binding?agent_did=" + did)
		get("/v1/civilization/profile?public_id=" + slug)
		get("/v1/supervision/home?public_id=" + slug)
	}
	return out
}

// TestReplayEqualsLive: read models rebuilt from the chain, in place and after a
// restart of the node from its data directory, answer every identity query byte
// for byte as the node that followed the chain live.
func TestReplayEqualsLive(t *testing.T) {
	dir := t.TempDir()
	n := newCivNodeWith(t, func(o *eventlog.Options) { o.InMemory, o.Dir = false, dir })
	slugs := civActivity(t, n)
	live := civSnapshot(t, n.testNode, slugs)

	// In place: every model folded again from the chain into a fresh key space.
	n.rebuildInPlace(t)
	compareSnapshots(t, "rebuilt in place", live, civSnapshot(t, n.testNode, slugs))

	// Restarted: reopen the data directory with fresh models, as civnode serve
	// and civnode replay do.
	if err := n.log.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := newCivNodeWith(t, func(o *eventlog.Options) { o.InMemory, o.Dir = false, dir })
	compareSnapshots(t, "restarted", live, civSnapshot(t, restarted.testNode, slugs))

	// The restarted decision model decides as the old one would have: taken slugs
	// and exclusive refs stay taken.
	restarted.civPost("/v1/civilization/bootstrap-identity", map[string]any{"display_name": "x", "public_id": slugs[1]}).
		wantError(t, http.StatusConflict, "slug_taken", "public_id")
	did, _ := restarted.bootstrap(map[string]any{"display_name": "Newcomer"})
	restarted.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
		"controller_kind": "local_model", "controller_ref": "gpu-0"}).wantError(t, http.StatusConflict, "controller_ref_taken", "controller_ref")
	restarted.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did,
		"controller_kind": "local_model", "controller_ref": "gpu-moved-away"}).wantOK(t, nil)
}

func compareSnapshots(t *testing.T, what string, want, got []string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d answers, live had %d", what, len(got), len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("%s differs:\n live    %s\n replay  %s", what, want[i], got[i])
		}
	}
}
