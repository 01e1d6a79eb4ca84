package http

import (
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/civnode/civnode/commands/catalog"
)

// TestGameCatalog: GET /v1/game/catalog serves the active catalog as a valid
// catalog file, to the owner and agents but not to observers.
func TestGameCatalog(t *testing.T) {
	n := newCivNode(t)
	_, slug := n.bootstrap(map[string]any{"display_name": "Ada", "public_id": "ada"})

	r := n.get("/v1/game/catalog").wantOK(t, nil)
	got, err := catalog.Parse(r.body)
	if err != nil {
		t.Fatalf("the served catalog is not a valid catalog file: %v", err)
	}
	if !reflect.DeepEqual(got, catalog.Default()) {
		t.Errorf("served catalog differs from the built-in one")
	}
	want := []string{"version", "stages", "roles", "factions", "strategies", "domains", "mission_templates", "mission_packs", "starter_missions"}
	if keys := jsonKeys(t, r.body); !slices.Equal(keys, want) {
		t.Errorf("keys = %v, want %v", keys, want)
	}

	n.request(http.MethodGet, "/v1/game/catalog", n.agentToken(slug), nil).wantOK(t, nil)
	n.request(http.MethodGet, "/v1/game/catalog", n.observerToken(), nil).wantError(t, http.StatusForbidden, "forbidden", "")
	n.request(http.MethodGet, "/v1/game/catalog", "", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	n.civPost("/v1/game/catalog", map[string]any{}).wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
}

// TestGameCatalogCustom: the server serves the catalog it was given.
func TestGameCatalogCustom(t *testing.T) {
	cat, err := catalog.Parse([]byte(`{"version":"test.1",
		"stages":[{"id":"start","title":"Start","description":"d"}],
		"roles":[{"id":"pilot","title":"Pilot","description":"d","focus_domains":["transport"]}],
		"factions":[{"id":"guild","title":"Guild","description":"d"}],
		"strategies":[{"id":"bold","title":"Bold","description":"d"}],
		"domains":[{"id":"transport","title":"Transport","description":"d"}],
		"mission_templates":[{"id":"first-flight","title":"First flight","description":"d","domain":"transport",
			"reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"sets":["starter","pack:basics"]}],
		"mission_packs":[{"id":"basics","title":"Basics","description":"d","default":true}],
		"starter_missions":["first-flight"]}`))
	if err != nil {
		t.Fatal(err)
	}
	n := newTestNodeWith(t, func(o *Options) { o.Catalog = cat }, nil)
	var body struct {
		Version string `json:"version"`
		Roles   []struct {
			ID string `json:"id"`
		} `json:"roles"`
		MissionTemplates []map[string]any `json:"mission_templates"`
	}
	n.get("/v1/game/catalog").wantOK(t, &body)
	if body.Version != "test.1" || len(body.Roles) != 1 || body.Roles[0].ID != "pilot" {
		t.Errorf("served %+v, want the custom catalog", body)
	}
	// Left-out optional fields are served explicitly.
	m := body.MissionTemplates[0]
	if v, ok := m["required_role"]; !ok || v != nil {
		t.Errorf("required_role = %v (present %v), want null", v, ok)
	}
	if p, ok := m["payload"].(map[string]any); !ok || len(p) != 0 {
		t.Errorf("payload = %v, want {}", m["payload"])
	}
}
