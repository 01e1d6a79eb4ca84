package http

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// stateRoute is the route that answers the record of a state map key (a
// treasury is a member of the metrics, which the test checks as a whole).
func stateRoute(t *testing.T, key string) string {
	t.Helper()
	kind, id, _ := projections.SplitStateKey(key)
	q := "?agent_did=" + url.QueryEscape(id)
	switch kind {
	case projections.StateKindIdentity:
		return "/v1/civilization/public-identity" + q
	case projections.StateKindBinding:
		return "/v1/civilization/controller-binding" + q
	case projections.StateKindProfile:
		return "/v1/civilization/profile" + q
	case projections.StateKindMission:
		return "/v1/core/missions/" + url.PathEscape(id)
	}
	t.Fatalf("no route for %s", key)
	return ""
}

// jcs is the RFC 8785 form of a JSON object, by the log's encoder.
func jcs(t *testing.T, b []byte) string {
	t.Helper()
	out, err := eventlog.CanonicalObject(b)
	if err != nil {
		t.Fatalf("JCS of %s: %v", b, err)
	}
	return string(out)
}

// TestStateValuesAreRouteAnswers checks, on a node wired as cmd wires it,
// that each state map entry is the JCS form of its route's real HTTP answer,
// whichever token asks; that every record those routes answer has its entry;
// and that a record the route does not find (404) has none.
func TestStateValuesAreRouteAnswers(t *testing.T) {
	w := newMissionWorld(t)
	settled := w.advance("settled") // pays ada and the genesis treasury
	w.advance("completed")
	w.advance("claimed")
	open := w.create(w.tokens["pub"], map[string]any{"subnet_id": "rim", "title": "Chart <the> \"rim\" & beyond\u2028"})
	w.civPost("/v1/civilization/profile", map[string]any{"agent_did": w.dids["ada"], "faction": "order",
		"role": "enforcer", "strategy": "cautious", "home_subnet_id": "genesis"}).wantOK(t, nil)

	entries := map[string][]byte{}
	if err := projections.StateEntries(w.log, func(k string, v []byte) error {
		entries[k] = v
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	treasuries := map[string]json.RawMessage{}
	kinds := map[string]int{}
	for k, v := range entries {
		kind, id, _ := projections.SplitStateKey(k)
		kinds[kind]++
		if kind == projections.StateKindTreasury {
			treasuries[id] = v
			continue
		}
		path := stateRoute(t, k)
		for _, token := range []string{testToken, w.tokens["ada"]} {
			r := w.request(http.MethodGet, path, token, nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, r.status, r.body)
			}
			if got := jcs(t, r.body); got != string(v) {
				t.Errorf("%s:\n  JCS(GET %s) = %s\n  state value  = %s", k, path, got, v)
			}
		}
	}

	// The treasuries, as GET /v1/civilization/metrics answers them.
	var m struct {
		Missions struct {
			Treasuries json.RawMessage `json:"treasuries"`
		} `json:"missions"`
	}
	w.get("/v1/civilization/metrics").wantOK(t, &m)
	fromEntries, err := json.Marshal(treasuries)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jcs(t, m.Missions.Treasuries), jcs(t, fromEntries); got != want {
		t.Errorf("JCS(metrics' missions.treasuries) = %s; the treasury entries make %s", got, want)
	}
	if v := string(entries[projections.StateKey(projections.StateKindTreasury, "genesis")]); v != "5" {
		t.Errorf("treasury/genesis = %q after one settlement that paid it 5", v)
	}

	// Every identity and mission the lists answer has its entries; a
	// binding the route does not find has none.
	var ids struct {
		Identities []struct {
			AgentDID string `json:"agent_did"`
		} `json:"identities"`
	}
	w.get("/v1/civilization/identities?limit=1000").wantOK(t, &ids)
	for _, id := range ids.Identities {
		for _, kind := range []string{projections.StateKindIdentity, projections.StateKindProfile, projections.StateKindBinding} {
			k := projections.StateKey(kind, id.AgentDID)
			status := w.get(stateRoute(t, k)).status
			if _, ok := entries[k]; ok != (status == http.StatusOK) {
				t.Errorf("%s: entry %v, route answers %d", k, ok, status)
			}
		}
	}
	var ms struct {
		Missions []struct {
			MissionID string `json:"mission_id"`
		} `json:"missions"`
	}
	w.get("/v1/core/missions?limit=1000").wantOK(t, &ms)
	for _, mi := range ms.Missions {
		if _, ok := entries[projections.StateKey(projections.StateKindMission, mi.MissionID)]; !ok {
			t.Errorf("mission %s has no entry", mi.MissionID)
		}
	}
	want := map[string]int{projections.StateKindIdentity: len(ids.Identities), projections.StateKindProfile: len(ids.Identities),
		projections.StateKindBinding: len(ids.Identities) - 1, // unbound has none
		projections.StateKindMission: len(ms.Missions), projections.StateKindTreasury: 1}
	for kind, n := range want {
		if kinds[kind] != n {
			t.Errorf("%d %s entries, want %d", kinds[kind], kind, n)
		}
	}
	if len(ms.Missions) != 4 || settled.MissionID == "" || open.MissionID == "" {
		t.Fatalf("the world has %d missions, want 4", len(ms.Missions))
	}

	// Records the routes do not find.
	for _, k := range []string{
		projections.StateKey(projections.StateKindMission, "019b0000-0000-7000-8000-000000000099"),
		projections.StateKey(projections.StateKindBinding, w.dids["unbound"]),
	} {
		if r := w.get(stateRoute(t, k)); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", stateRoute(t, k), r.status)
		}
		if v, ok, err := projections.StateValue(w.log, k); err != nil || ok {
			t.Errorf("StateValue(%s) = %s, %v, %v; want absent", k, v, ok, err)
		}
	}
}
