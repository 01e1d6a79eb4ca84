package http

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

var (
	recordKeys  = []string{"agent_did", "public_id", "display_name", "controller_id", "model_provider", "capabilities_granted", "controller_binding", "wallet_adapter", "subnet_memberships", "stats", "created_at", "updated_at"}
	bindingKeys = []string{"agent_did", "controller_kind", "controller_ref", "node_id", "ownership_scope", "active", "created_at", "updated_at"}
	profileKeys = []string{"agent_did", "faction", "role", "strategy", "home_subnet_id", "home_zone_id", "updated_at"}
)

func wantKeyOrder(t *testing.T, what string, body []byte, want []string) {
	t.Helper()
	if got := jsonKeys(t, body); !reflect.DeepEqual(got, want) {
		t.Errorf("%s keys = %v\n want %v", what, got, want)
	}
}

func TestBootstrapAndReadIdentity(t *testing.T) {
	n := newCivNode(t)
	r := n.civPost("/v1/civilization/bootstrap-identity", map[string]any{
		"display_name": "Ada Lovelace", "faction": "order", "role": "archivist", "strategy": "balanced",
		"home_subnet_id": "genesis", "home_zone_id": "north"})
	var boot map[string]any
	r.wantOK(t, &boot)
	wantKeyOrder(t, "bootstrap", r.body, []string{"agent_did", "public_id", "controller_binding"})
	did := boot["agent_did"].(string)
	if boot["public_id"] != "ada-lovelace" || boot["controller_binding"] != nil || !strings.HasPrefix(did, "did:key:z6Mk") {
		t.Fatalf("bootstrap = %s", r.body)
	}

	byDID := n.get("/v1/civilization/public-identity?agent_did="+url.QueryEscape(did)).wantOK(t, nil)
	bySlug := n.get("/v1/civilization/public-identity?public_id=ada-lovelace").wantOK(t, nil)
	if string(byDID.body) != string(bySlug.body) {
		t.Errorf("by DID %s\n by slug %s", byDID.body, bySlug.body)
	}
	wantKeyOrder(t, "record", byDID.body, recordKeys)
	var rec map[string]any
	byDID.decode(t, &rec)
	created := rec["created_at"].(string)
	want := `{"agent_did":"` + did + `","public_id":"ada-lovelace","display_name":"Ada Lovelace","controller_id":null,` +
		`"model_provider":null,"capabilities_granted":[],"controller_binding":null,"wallet_adapter":null,` +
		`"subnet_memberships":[],"stats":{"credit":0,"reputation":0,"capacity":0,"missions_completed":0},` +
		`"created_at":"` + created + `","updated_at":"` + created + `"}` + "\n"
	if string(byDID.body) != want {
		t.Errorf("record %s\n want %s", byDID.body, want)
	}

	prof := n.get("/v1/civilization/profile?public_id=ada-lovelace").wantOK(t, nil)
	wantKeyOrder(t, "profile", prof.body, profileKeys)
	var p map[string]any
	prof.decode(t, &p)
	if p["faction"] != "order" || p["role"] != "archivist" || p["strategy"] != "balanced" ||
		p["home_subnet_id"] != "genesis" || p["home_zone_id"] != "north" || p["agent_did"] != did {
		t.Errorf("profile = %s", prof.body)
	}
	n.get("/v1/civilization/controller-binding?agent_did="+url.QueryEscape(did)).
		wantError(t, http.StatusNotFound, "controller_binding_not_found", "")

	var list struct {
		Identities []json.RawMessage `json:"identities"`
		NextCursor *string           `json:"next_cursor"`
	}
	lr := n.get("/v1/civilization/identities").wantOK(t, &list)
	wantKeyOrder(t, "list", lr.body, []string{"identities", "next_cursor"})
	if len(list.Identities) != 1 || list.NextCursor != nil || string(list.Identities[0])+"\n" != string(byDID.body) {
		t.Errorf("list = %s", lr.body)
	}
}

func TestUpsertsReadTheirWrites(t *testing.T) {
	n := newCivNode(t)
	did, _ := n.bootstrap(map[string]any{"display_name": "Grace"})

	r := n.civPost("/v1/civilization/public-identity", map[string]any{
		"agent_did": did, "display_name": "Grace Hopper", "public_id": "grace",
		"model_provider": "local-llm", "capabilities_granted": []string{"missions.claim"},
		"wallet_adapter": "x402-evm", "subnet_memberships": []string{"genesis"}}).wantOK(t, nil)
	wantKeyOrder(t, "record", r.body, recordKeys)
	if got := n.get("/v1/civilization/public-identity?public_id=grace").wantOK(t, nil); string(got.body) != string(r.body) {
		t.Errorf("GET after POST %s\n POST answered %s", got.body, r.body)
	}

	b := n.civPost("/v1/civilization/controller-binding", map[string]any{
		"agent_did": did, "controller_kind": "remote_orchestrator", "controller_ref": "orch-1"}).wantOK(t, nil)
	wantKeyOrder(t, "binding", b.body, bindingKeys)
	var bind map[string]any
	b.decode(t, &bind)
	if bind["ownership_scope"] != "exclusive" || bind["active"] != true || bind["node_id"] != nil ||
		bind["controller_ref"] != "orch-1" || bind["created_at"] != bind["updated_at"] {
		t.Errorf("binding = %s", b.body)
	}
	if got := n.get("/v1/civilization/controller-binding?public_id=grace").wantOK(t, nil); string(got.body) != string(b.body) {
		t.Errorf("GET binding %s\n POST answered %s", got.body, b.body)
	}
	var rec map[string]any
	n.get("/v1/civilization/public-identity?public_id=grace").wantOK(t, &rec)
	if rec["controller_id"] != "orch-1" || rec["controller_binding"] == nil {
		t.Errorf("record after binding = %v", rec)
	}

	p := n.civPost("/v1/civilization/profile", map[string]any{"agent_did": did, "faction": "freeport", "role": "broker"}).wantOK(t, nil)
	wantKeyOrder(t, "profile", p.body, profileKeys)
	var prof map[string]any
	p.decode(t, &prof)
	if prof["faction"] != "freeport" || prof["role"] != "broker" || prof["strategy"] != nil || prof["home_subnet_id"] != nil {
		t.Errorf("profile = %s", p.body)
	}
	if got := n.get("/v1/civilization/profile?agent_did="+url.QueryEscape(did)).wantOK(t, nil); string(got.body) != string(p.body) {
		t.Errorf("GET profile %s\n POST answered %s", got.body, p.body)
	}

	// Bootstrapping again never reuses a DID; its binding is null.
	did2, slug2 := n.bootstrap(map[string]any{"display_name": "Grace"})
	if did2 == did || slug2 != "grace-2" {
		t.Errorf("second Grace: %s %s", did2, slug2)
	}
}

// TestCivilizationRefusals covers every 400/401/403/404/409 of the endpoints; none
// may append anything.
func TestCivilizationRefusals(t *testing.T) {
	n := newCivNode(t)
	did, _ := n.bootstrap(map[string]any{"display_name": "Ada", "public_id": "ada"})
	other, _ := n.bootstrap(map[string]any{"display_name": "Bob", "public_id": "bob"})
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": other, "controller_kind": "local_model", "controller_ref": "gpu-1"}).wantOK(t, nil)
	agentAda := n.agentToken("ada")
	observer := n.observerToken()
	unknown := "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
	q := url.QueryEscape

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
		code, field               string
	}{
		// bootstrap
		{"bootstrap no token", "POST", "/v1/civilization/bootstrap-identity", "", `{"display_name":"x"}`, 401, "unauthorized", ""},
		{"bootstrap agent token", "POST", "/v1/civilization/bootstrap-identity", agentAda, `{"display_name":"x"}`, 403, "forbidden", ""},
		{"bootstrap observer", "POST", "/v1/civilization/bootstrap-identity", observer, `{"display_name":"x"}`, 403, "forbidden", ""},
		{"bootstrap bad json", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":`, 400, "invalid_json", ""},
		{"bootstrap empty body", "POST", "/v1/civilization/bootstrap-identity", testToken, ``, 400, "invalid_json", ""},
		{"bootstrap unknown field", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","displayname":"y"}`, 400, "unknown_field", "displayname"},
		{"bootstrap wrong type", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":5}`, 400, "invalid_field", "display_name"},
		{"bootstrap null name", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":null}`, 400, "missing_field", "display_name"},
		{"bootstrap no name", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"faction":"order"}`, 400, "missing_field", "display_name"},
		{"bootstrap long name", "POST", "/v1/civilization/bootstrap-identity", testToken, map[string]any{"display_name": strings.Repeat("n", 65)}, 400, "invalid_field", "display_name"},
		{"bootstrap control char", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"a\u0007b"}`, 400, "invalid_field", "display_name"},
		{"bootstrap bad slug", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","public_id":"A!"}`, 400, "invalid_field", "public_id"},
		{"bootstrap slug taken", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","public_id":"ada"}`, 409, "slug_taken", "public_id"},
		{"bootstrap faction", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","faction":"empire"}`, 400, "invalid_field", "faction"},
		{"bootstrap role", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","role":"captain"}`, 400, "invalid_field", "role"},
		{"bootstrap strategy", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","strategy":"wild"}`, 400, "invalid_field", "strategy"},
		{"bootstrap subnet", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","home_subnet_id":"Genesis"}`, 400, "invalid_field", "home_subnet_id"},
		{"bootstrap zone", "POST", "/v1/civilization/bootstrap-identity", testToken, `{"display_name":"x","home_subnet_id":"g","home_zone_id":"a b"}`, 400, "invalid_field", "home_zone_id"},
		{"bootstrap body array", "POST", "/v1/civilization/bootstrap-identity", testToken, `[]`, 400, "invalid_json", ""},
		// public identity
		{"get identity neither", "GET", "/v1/civilization/public-identity", testToken, nil, 400, "missing_field", ""},
		{"get identity both", "GET", "/v1/civilization/public-identity?agent_did=" + q(did) + "&public_id=ada", testToken, nil, 400, "invalid_field", ""},
		{"get identity twice", "GET", "/v1/civilization/public-identity?public_id=ada&public_id=bob", testToken, nil, 400, "invalid_query", "public_id"},
		{"get identity unknown did", "GET", "/v1/civilization/public-identity?agent_did=" + q(unknown), testToken, nil, 404, "identity_not_found", "agent_did"},
		{"get identity unknown slug", "GET", "/v1/civilization/public-identity?public_id=nobody", testToken, nil, 404, "identity_not_found", "public_id"},
		{"get identity malformed did", "GET", "/v1/civilization/public-identity?agent_did=did:web:example.com", testToken, nil, 400, "invalid_field", "agent_did"},
		{"get identity malformed slug", "GET", "/v1/civilization/public-identity?public_id=No_Body", testToken, nil, 400, "invalid_field", "public_id"},
		{"get binding malformed slug", "GET", "/v1/civilization/controller-binding?public_id=x", testToken, nil, 400, "invalid_field", "public_id"},
		{"home malformed slug", "GET", "/v1/supervision/home?public_id=A!", testToken, nil, 400, "invalid_field", "public_id"},
		{"my missions malformed slug", "GET", "/v1/core/missions/my?public_id=ab", testToken, nil, 400, "invalid_field", "public_id"},
		{"get identity observer", "GET", "/v1/civilization/public-identity?public_id=ada", observer, nil, 403, "forbidden", ""},
		{"get identity no token", "GET", "/v1/civilization/public-identity?public_id=ada", "", nil, 401, "unauthorized", ""},
		{"post identity unknown", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": unknown, "display_name": "x"}, 404, "identity_not_found", "agent_did"},
		{"post identity no did", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"display_name": "x"}, 400, "missing_field", "agent_did"},
		{"post identity bad did", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": "ada", "display_name": "x"}, 400, "invalid_field", "agent_did"},
		{"post identity no name", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": did}, 400, "missing_field", "display_name"},
		{"post identity slug taken", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": did, "display_name": "x", "public_id": "bob"}, 409, "slug_taken", "public_id"},
		{"post identity caps type", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": did, "display_name": "x", "capabilities_granted": "all"}, 400, "invalid_field", "capabilities_granted"},
		{"post identity caps dup", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": did, "display_name": "x", "capabilities_granted": []string{"a", "a"}}, 400, "invalid_field", "capabilities_granted"},
		{"post identity subnets", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": did, "display_name": "x", "subnet_memberships": []string{"UPPER"}}, 400, "invalid_field", "subnet_memberships"},
		{"post identity unknown field", "POST", "/v1/civilization/public-identity", testToken, map[string]any{"agent_did": did, "display_name": "x", "stats": map[string]any{}}, 400, "unknown_field", "stats"},
		{"post identity agent for other", "POST", "/v1/civilization/public-identity", agentAda, map[string]any{"agent_did": other, "display_name": "x"}, 403, "forbidden", ""},
		{"post identity observer", "POST", "/v1/civilization/public-identity", observer, map[string]any{"agent_did": did, "display_name": "x"}, 403, "forbidden", ""},
		// controller binding
		{"get binding neither", "GET", "/v1/civilization/controller-binding", testToken, nil, 400, "missing_field", ""},
		{"get binding unknown", "GET", "/v1/civilization/controller-binding?public_id=nobody", testToken, nil, 404, "identity_not_found", "public_id"},
		{"get binding none", "GET", "/v1/civilization/controller-binding?public_id=ada", testToken, nil, 404, "controller_binding_not_found", ""},
		{"get binding observer", "GET", "/v1/civilization/controller-binding?public_id=bob", observer, nil, 403, "forbidden", ""},
		{"post binding no kind", "POST", "/v1/civilization/controller-binding", testToken, map[string]any{"agent_did": did, "controller_ref": "r"}, 400, "missing_field", "controller_kind"},
		{"post binding no ref", "POST", "/v1/civilization/controller-binding", testToken, map[string]any{"agent_did": did, "controller_kind": "local_model"}, 400, "missing_field", "controller_ref"},
		{"post binding bad kind", "POST", "/v1/civilization/controller-binding", testToken, map[string]any{"agent_did": did, "controller_kind": "Local Model", "controller_ref": "r"}, 400, "invalid_field", "controller_kind"},
		{"post binding bad scope", "POST", "/v1/civilization/controller-binding", testToken, map[string]any{"agent_did": did, "controller_kind": "k", "controller_ref": "r", "ownership_scope": "mine"}, 400, "invalid_field", "ownership_scope"},
		{"post binding active type", "POST", "/v1/civilization/controller-binding", testToken, `{"agent_did":"` + did + `","controller_kind":"k","controller_ref":"r","active":"yes"}`, 400, "invalid_field", "active"},
		{"post binding ref taken", "POST", "/v1/civilization/controller-binding", testToken, map[string]any{"agent_did": did, "controller_kind": "local_model", "controller_ref": "gpu-1"}, 409, "controller_ref_taken", "controller_ref"},
		{"post binding unknown", "POST", "/v1/civilization/controller-binding", testToken, map[string]any{"agent_did": unknown, "controller_kind": "k", "controller_ref": "r"}, 404, "identity_not_found", "agent_did"},
		{"post binding agent for other", "POST", "/v1/civilization/controller-binding", agentAda, map[string]any{"agent_did": other, "controller_kind": "k", "controller_ref": "r"}, 403, "forbidden", ""},
		// profile
		{"get profile neither", "GET", "/v1/civilization/profile", testToken, nil, 400, "missing_field", ""},
		{"get profile unknown", "GET", "/v1/civilization/profile?agent_did=" + q(unknown), testToken, nil, 404, "identity_not_found", "agent_did"},
		{"get profile observer", "GET", "/v1/civilization/profile?public_id=ada", observer, nil, 403, "forbidden", ""},
		{"post profile role", "POST", "/v1/civilization/profile", testToken, map[string]any{"agent_did": did, "role": "pilot"}, 400, "invalid_field", "role"},
		{"post profile no did", "POST", "/v1/civilization/profile", testToken, map[string]any{"role": "broker"}, 400, "missing_field", "agent_did"},
		{"post profile unknown", "POST", "/v1/civilization/profile", testToken, map[string]any{"agent_did": unknown}, 404, "identity_not_found", "agent_did"},
		{"post profile agent for other", "POST", "/v1/civilization/profile", agentAda, map[string]any{"agent_did": other, "role": "broker"}, 403, "forbidden", ""},
		{"post profile unknown field", "POST", "/v1/civilization/profile", testToken, map[string]any{"agent_did": did, "home_subnet": "g"}, 400, "unknown_field", "home_subnet"},
		// lists, views, metrics, briefings
		{"identities bad cursor", "GET", "/v1/civilization/identities?cursor=nope", testToken, nil, 400, "invalid_query", "cursor"},
		{"identities limit 0", "GET", "/v1/civilization/identities?limit=0", testToken, nil, 400, "invalid_field", "limit"},
		{"identities limit 1001", "GET", "/v1/civilization/identities?limit=1001", testToken, nil, 400, "invalid_field", "limit"},
		{"identities observer", "GET", "/v1/civilization/identities", observer, nil, 403, "forbidden", ""},
		{"metrics observer", "GET", "/v1/civilization/metrics", observer, nil, 403, "forbidden", ""},
		{"supervision identities agent", "GET", "/v1/supervision/identities", agentAda, nil, 403, "forbidden", ""},
		{"supervision identities observer", "GET", "/v1/supervision/identities", observer, nil, 403, "forbidden", ""},
		{"supervision identities cursor", "GET", "/v1/supervision/identities?cursor=%21", testToken, nil, 400, "invalid_query", "cursor"},
		{"home no public_id", "GET", "/v1/supervision/home", testToken, nil, 400, "missing_field", "public_id"},
		{"home unknown", "GET", "/v1/supervision/home?public_id=nobody", testToken, nil, 404, "identity_not_found", "public_id"},
		{"home agent for other", "GET", "/v1/supervision/home?public_id=bob", agentAda, nil, 403, "forbidden", ""},
		{"home observer", "GET", "/v1/supervision/home?public_id=ada", observer, nil, 403, "forbidden", ""},
		{"supervision briefing agent", "GET", "/v1/supervision/briefing", agentAda, nil, 403, "forbidden", ""},
		{"civilization briefing observer", "GET", "/v1/civilization/briefing", observer, nil, 403, "forbidden", ""},
		{"briefing hours 0", "GET", "/v1/civilization/briefing?hours=0", testToken, nil, 400, "invalid_field", "hours"},
		{"briefing hours 721", "GET", "/v1/civilization/briefing?hours=721", testToken, nil, 400, "invalid_field", "hours"},
		{"briefing hours text", "GET", "/v1/civilization/briefing?hours=day", testToken, nil, 400, "invalid_field", "hours"},
		{"briefing hours fraction", "GET", "/v1/supervision/briefing?hours=1.5", testToken, nil, 400, "invalid_field", "hours"},
		{"briefing hours sign", "GET", "/v1/supervision/briefing?hours=%2B5", testToken, nil, 400, "invalid_field", "hours"},
		{"briefing hours padded", "GET", "/v1/supervision/briefing?hours=024", testToken, nil, 400, "invalid_field", "hours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tip := n.log.Tip()
			n.t = t
			r := n.civSend(tc.method, tc.path, tc.token, tc.body)
			r.wantError(t, tc.status, tc.code, tc.field)
			if got := n.log.Tip(); got != tip {
				t.Errorf("tip moved from %d to %d", tip.Seq, got.Seq)
			}
		})
	}
	n.t = t
}

// TestAgentTokenIsScoped: an agent token acts for its own identity and reads the
// civilization layer, and nothing more.
func TestAgentTokenIsScoped(t *testing.T) {
	n := newCivNode(t)
	did, _ := n.bootstrap(map[string]any{"display_name": "Ada", "public_id": "ada"})
	n.bootstrap(map[string]any{"display_name": "Bob", "public_id": "bob"})
	tok := n.agentToken("ada")

	n.civSend("POST", "/v1/civilization/profile", tok, map[string]any{"agent_did": did, "faction": "order"}).wantOK(t, nil)
	n.civSend("POST", "/v1/civilization/public-identity", tok, map[string]any{"agent_did": did, "display_name": "Ada Prime"}).wantOK(t, nil)
	n.civSend("POST", "/v1/civilization/controller-binding", tok, map[string]any{"agent_did": did, "controller_kind": "local_model", "controller_ref": "laptop"}).wantOK(t, nil)
	for _, path := range []string{"/v1/civilization/identities", "/v1/civilization/public-identity?public_id=bob",
		"/v1/civilization/profile?public_id=bob", "/v1/civilization/metrics", "/v1/civilization/briefing",
		"/v1/supervision/home?public_id=ada"} {
		n.civSend("GET", path, tok, nil).wantOK(t, nil)
	}
	// The profile change is visible to the owner at once.
	var p map[string]any
	n.get("/v1/civilization/profile?public_id=ada").wantOK(t, &p)
	if p["faction"] != "order" {
		t.Errorf("profile = %v", p)
	}
}
