package http

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

func TestSupervisionHome(t *testing.T) {
	n := newCivNode(t)
	did, _ := n.bootstrap(map[string]any{"display_name": "Home Body", "public_id": "home-body",
		"home_subnet_id": "genesis", "home_zone_id": "dock"})
	other, _ := n.bootstrap(map[string]any{"display_name": "Neighbour", "home_subnet_id": "genesis"})
	n.civPost("/v1/civilization/public-identity", map[string]any{"agent_did": other, "display_name": "Neighbour",
		"subnet_memberships": []string{"genesis"}}).wantOK(t, nil)
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did, "controller_kind": "local_model", "controller_ref": "r"}).wantOK(t, nil)
	n.appendEvents("mission.created") // not about the agent

	r := n.get("/v1/supervision/home?public_id=home-body").wantOK(t, nil)
	wantKeyOrder(t, "home", r.body, []string{"identity", "profile", "home_subnet", "active_missions", "recent_events"})
	var home struct {
		Identity       json.RawMessage   `json:"identity"`
		Profile        json.RawMessage   `json:"profile"`
		HomeSubnet     json.RawMessage   `json:"home_subnet"`
		ActiveMissions []json.RawMessage `json:"active_missions"`
		RecentEvents   []json.RawMessage `json:"recent_events"`
	}
	r.decode(t, &home)
	rec := n.get("/v1/civilization/public-identity?public_id=home-body").wantOK(t, nil)
	prof := n.get("/v1/civilization/profile?public_id=home-body").wantOK(t, nil)
	if string(home.Identity)+"\n" != string(rec.body) || string(home.Profile)+"\n" != string(prof.body) {
		t.Errorf("home identity/profile differ from their endpoints:\n%s\n%s", home.Identity, home.Profile)
	}
	if want := `{"subnet_id":"genesis","home_identities":2,"member_identities":1,"zone_id":"dock","governed":true}`; string(home.HomeSubnet) != want {
		t.Errorf("home_subnet = %s\n want %s", home.HomeSubnet, want)
	}
	if home.ActiveMissions == nil || len(home.ActiveMissions) != 0 {
		t.Errorf("active_missions = %v", home.ActiveMissions)
	}
	// The agent's events, verbatim and in order: bootstrapped, profile, binding.
	var want []string
	n.log.Scan(1, n.log.Tip().Seq, func(ev *eventlog.Event) error {
		if strings.Contains(string(ev.Payload), did) {
			want = append(want, string(ev.Raw()))
		}
		return nil
	})
	if len(want) != 3 || len(home.RecentEvents) != 3 {
		t.Fatalf("%d recent events, chain has %d", len(home.RecentEvents), len(want))
	}
	for i := range want {
		if string(home.RecentEvents[i]) != want[i] {
			t.Errorf("recent event %d = %s\n want %s", i, home.RecentEvents[i], want[i])
		}
	}

	// No home subnet: null. A subnet this node does not govern: governed false.
	n.bootstrap(map[string]any{"display_name": "Drifter", "public_id": "drifter"})
	var drifter map[string]json.RawMessage
	n.get("/v1/supervision/home?public_id=drifter").wantOK(t, &drifter)
	if string(drifter["home_subnet"]) != "null" {
		t.Errorf("home_subnet = %s", drifter["home_subnet"])
	}
	n.bootstrap(map[string]any{"display_name": "Far", "public_id": "far", "home_subnet_id": "outer-rim"})
	n.get("/v1/supervision/home?public_id=far").wantOK(t, &drifter)
	if !strings.Contains(string(drifter["home_subnet"]), `"governed":false`) {
		t.Errorf("home_subnet = %s", drifter["home_subnet"])
	}
	// An agent token sees its own home.
	n.civSend("GET", "/v1/supervision/home?public_id=home-body", n.agentToken("home-body"), nil).wantOK(t, nil)
}

func TestSupervisionIdentities(t *testing.T) {
	n := newCivNode(t)
	did, _ := n.bootstrap(map[string]any{"display_name": "Ada", "faction": "order"})
	r := n.get("/v1/supervision/identities").wantOK(t, nil)
	wantKeyOrder(t, "supervision identities", r.body, []string{"identities", "next_cursor"})
	var list struct {
		Identities []json.RawMessage `json:"identities"`
	}
	r.decode(t, &list)
	if len(list.Identities) != 1 {
		t.Fatalf("list = %s", r.body)
	}
	wantKeyOrder(t, "supervised identity", list.Identities[0], append(append([]string{}, recordKeys...), "profile"))
	var item struct {
		Profile json.RawMessage `json:"profile"`
	}
	json.Unmarshal(list.Identities[0], &item)
	prof := n.get("/v1/civilization/profile?agent_did="+url.QueryEscape(did)).wantOK(t, nil)
	if string(item.Profile)+"\n" != string(prof.body) {
		t.Errorf("profile in list %s\n want %s", item.Profile, prof.body)
	}
}

func TestCivilizationMetrics(t *testing.T) {
	n := newCivNode(t)
	n.bootstrap(map[string]any{"display_name": "A", "faction": "order", "role": "broker", "home_subnet_id": "genesis"})
	did, _ := n.bootstrap(map[string]any{"display_name": "B", "faction": "order", "strategy": "cautious"})
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did, "controller_kind": "local_model", "controller_ref": "r"}).wantOK(t, nil)
	r := n.get("/v1/civilization/metrics").wantOK(t, nil)
	want := `{"identities":2,"by_faction":{"order":2},"by_role":{"broker":1},"by_strategy":{"cautious":1},` +
		`"by_home_subnet":{"genesis":1},"by_subnet_membership":{},"bindings":{"total":1,"active":1,"by_kind":{"local_model":1},"shared":0},` +
		`"stats_totals":{"credit":0,"reputation":0,"capacity":0,"missions_completed":0},` +
		`"missions":{"total":0,"by_state":{"claimed":0,"completed":0,"created":0,"settled":0},` +
		`"paid":{"settlements":0,"agent_credit":0,"reputation":0,"capacity":0,"treasury_share_credit":0},"treasuries":{}}}` + "\n"
	if string(r.body) != want {
		t.Errorf("metrics = %s want %s", r.body, want)
	}
}
