package http

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
)

// gameSet is the part of GET /v1/game/starter-missions, GET
// /v1/game/mission-pack and their installs that the tests read.
type gameSet struct {
	Published      *bool   `json:"published"`
	CatalogVersion string  `json:"catalog_version"`
	Installed      bool    `json:"installed"`
	InstalledAt    *string `json:"installed_at"`
	SubnetID       *string `json:"subnet_id"`
	InstalledBy    *string `json:"installed_by"`
	Pack           *struct {
		ID      string `json:"id"`
		Default bool   `json:"default"`
	} `json:"pack"`
	MissionIDs      []string       `json:"mission_ids"`
	MissionsByState map[string]int `json:"missions_by_state"`
	Missions        []struct {
		TemplateID string                   `json:"template_id"`
		Template   *catalog.MissionTemplate `json:"template"`
		Mission    *gameMissionRec          `json:"mission"`
	} `json:"missions"`
}

// gameMissionRec is a mission record with the fields a template sets.
type gameMissionRec struct {
	missionRec
	Title           string          `json:"title"`
	PublisherKind   string          `json:"publisher_kind"`
	ZoneID          *string         `json:"zone_id"`
	RequiredRole    *string         `json:"required_role"`
	RequiredFaction *string         `json:"required_faction"`
	Payload         json.RawMessage `json:"payload"`
}

// The two sets as the tests address them.
var gameSets = []struct {
	name, get, install, event string
	templates                 func(*catalog.Catalog) []catalog.MissionTemplate
}{
	{"starter missions", "/v1/game/starter-missions", "/v1/game/starter-missions/bootstrap", "game.starter_missions.installed",
		func(c *catalog.Catalog) []catalog.MissionTemplate { return c.Starter() }},
	{"mission pack", "/v1/game/mission-pack", "/v1/game/mission-pack/bootstrap", "game.mission_pack.installed",
		func(c *catalog.Catalog) []catalog.MissionTemplate { return c.PackTemplates(c.DefaultPack().ID) }},
}

// withoutPublished is an install's answer as the matching GET answers: the
// same body without its leading "published" field.
func withoutPublished(t *testing.T, body []byte) []byte {
	t.Helper()
	for _, p := range []string{`{"published":true,`, `{"published":false,`} {
		if rest, ok := bytes.CutPrefix(body, []byte(p)); ok {
			return append([]byte("{"), rest...)
		}
	}
	t.Fatalf("install answer does not start with published: %s", body)
	return nil
}

// TestGameInstall: before an install a set lists its catalog templates without
// missions; an install publishes one mission per template, published by the
// genesis government through the mission rules, and answers with the set as
// GET then shows it; a repeat publishes nothing and answers with the same
// missions.
func TestGameInstall(t *testing.T) {
	cat := catalog.Default()
	for _, set := range gameSets {
		t.Run(set.name, func(t *testing.T) {
			n := newCivNode(t)
			templates := set.templates(cat)
			var before gameSet
			n.get(set.get).wantOK(t, &before)
			if before.Installed || before.InstalledAt != nil || len(before.MissionIDs) != 0 || len(before.Missions) != len(templates) {
				t.Fatalf("before the install: %+v", before)
			}
			for i, m := range before.Missions {
				if m.TemplateID != templates[i].ID || m.Template == nil || m.Template.Title != templates[i].Title || m.Mission != nil {
					t.Errorf("item %d: %+v", i, m)
				}
			}

			tip := n.log.Tip().Seq
			r := n.civPost(set.install, map[string]any{})
			var got gameSet
			r.wantOK(t, &got)
			if got.Published == nil || !*got.Published || !got.Installed || got.InstalledAt == nil ||
				*got.SubnetID != "genesis" || *got.InstalledBy != n.log.NodeDID() || got.CatalogVersion != cat.Version {
				t.Fatalf("install answered %s", r.body)
			}
			if added := n.log.Tip().Seq - tip; added != uint64(len(templates)+1) {
				t.Errorf("install appended %d events, want %d", added, len(templates)+1)
			}
			if len(got.MissionIDs) != len(templates) || len(got.Missions) != len(templates) || got.MissionsByState["created"] != len(templates) {
				t.Fatalf("install answered %s", r.body)
			}
			for i, m := range got.Missions {
				tpl := templates[i]
				rec := m.Mission
				if m.TemplateID != tpl.ID || rec == nil || rec.MissionID != got.MissionIDs[i] {
					t.Fatalf("item %d: %+v", i, m)
				}
				if rec.Title != tpl.Title || rec.Publisher != "genesis" || rec.PublisherKind != "planetary_government" ||
					rec.SubnetID != "genesis" || rec.ZoneID != nil || rec.Domain != tpl.Domain || rec.State != "created" ||
					!samePtr(rec.RequiredRole, tpl.RequiredRole) || !samePtr(rec.RequiredFaction, tpl.RequiredFaction) ||
					rec.Reward["agent_credit"] != int(tpl.Reward.AgentCredit) || string(rec.Payload) != string(tpl.Payload) {
					t.Errorf("template %s published as %+v", tpl.ID, rec)
				}
				var direct gameMissionRec
				n.get("/v1/core/missions/"+rec.MissionID).wantOK(t, &direct)
				if direct.MissionID != rec.MissionID || direct.CreatedAt != rec.CreatedAt {
					t.Errorf("GET /v1/core/missions/%s = %+v", rec.MissionID, direct)
				}
			}
			if g := n.get(set.get); !bytes.Equal(g.body, withoutPublished(t, r.body)) {
				t.Errorf("GET after the install:\n %s\ninstall answered\n %s", g.body, r.body)
			}

			tip = n.log.Tip().Seq
			again := n.civPost(set.install, map[string]any{})
			var rep gameSet
			again.wantOK(t, &rep)
			if rep.Published == nil || *rep.Published || !bytes.Equal(withoutPublished(t, again.body), withoutPublished(t, r.body)) {
				t.Errorf("repeat answered\n %s\nthe install\n %s", again.body, r.body)
			}
			if n.log.Tip().Seq != tip {
				t.Errorf("a repeat appended %d events", n.log.Tip().Seq-tip)
			}
			_, total, err := n.log.Query(eventlog.Query{Type: set.event, Limit: 1})
			if err != nil || total != 1 {
				t.Errorf("%d %s events (%v)", total, set.event, err)
			}
		})
	}
}

func samePtr(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// TestGameInstallBody: an install's body must be exactly an empty object;
// anything else is 400 and appends nothing.
func TestGameInstallBody(t *testing.T) {
	n := newCivNode(t)
	for _, set := range gameSets {
		for _, tc := range []struct{ body, code, field string }{
			{``, "invalid_json", ""},
			{`null`, "invalid_json", ""},
			{`[]`, "invalid_json", ""},
			{`"{}"`, "invalid_json", ""},
			{`1`, "invalid_json", ""},
			{`{`, "invalid_json", ""},
			{`{}{}`, "invalid_json", ""},
			{`{"force":true}`, "unknown_field", "force"},
			{`{"pack_id":"genesis-expansion"}`, "unknown_field", "pack_id"},
		} {
			tip := n.log.Tip().Seq
			r := n.civSend(http.MethodPost, set.install, testToken, tc.body)
			r.wantError(t, http.StatusBadRequest, tc.code, tc.field)
			if n.log.Tip().Seq != tip {
				t.Errorf("%s with body %q appended", set.install, tc.body)
			}
		}
		n.civSend(http.MethodPost, set.install, testToken, " { } \n").wantOK(t, nil)
	}
}

// TestGameAccess: owner and agent tokens read the game endpoints; only the
// owner installs; observers get 403 and the unauthenticated 401; a refused
// install appends nothing.
func TestGameAccess(t *testing.T) {
	w := newMissionWorld(t)
	obs := w.observerToken()
	reads := []string{"/v1/game/status", "/v1/game/bootstrap", "/v1/game/starter-missions", "/v1/game/mission-pack"}
	for _, path := range reads {
		w.civSend(http.MethodGet, path, w.tokens["ada"], nil).wantOK(t, nil)
		w.civSend(http.MethodGet, path, obs, nil).wantError(t, http.StatusForbidden, "forbidden", "")
		w.civSend(http.MethodGet, path, "", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	}
	for _, set := range gameSets {
		tip := w.log.Tip().Seq
		for _, tok := range []string{w.tokens["ada"], w.tokens["pub"], obs} {
			w.refused(t, w.civSend(http.MethodPost, set.install, tok, map[string]any{}), tip, http.StatusForbidden, "forbidden", "")
		}
		w.refused(t, w.civSend(http.MethodPost, set.install, "", map[string]any{}), tip, http.StatusUnauthorized, "unauthorized", "")
	}
	var st gameStatus
	w.get("/v1/game/status").wantOK(t, &st)
	if st.StarterMissions.Installed || st.MissionPack.Installed {
		t.Errorf("a refused install shows as installed: %+v", st)
	}
}

// gameStatus is the part of GET /v1/game/status the tests read.
type gameStatus struct {
	CatalogVersion  string   `json:"catalog_version"`
	GovernedSubnet  *string  `json:"governed_subnet"`
	ActivePacks     []string `json:"active_packs"`
	StarterMissions gameSet  `json:"starter_missions"`
	MissionPack     struct {
		PackID string `json:"pack_id"`
		gameSet
	} `json:"mission_pack"`
	Bootstrap struct {
		Complete   bool    `json:"complete"`
		StepsDone  int     `json:"steps_done"`
		StepsTotal int     `json:"steps_total"`
		NextStep   *string `json:"next_step"`
	} `json:"bootstrap"`
}

// TestGameStatus: the status follows installs and the states of the installed
// missions.
func TestGameStatus(t *testing.T) {
	w := newMissionWorld(t)
	cat := catalog.Default()
	var st gameStatus
	r := w.get("/v1/game/status").wantOK(t, &st)
	if got := jsonKeys(t, r.body); !slices.Equal(got, []string{"catalog_version", "governed_subnet", "active_packs",
		"starter_missions", "mission_pack", "bootstrap"}) {
		t.Errorf("keys %v", got)
	}
	if st.CatalogVersion != cat.Version || *st.GovernedSubnet != "genesis" || len(st.ActivePacks) != 0 ||
		st.StarterMissions.Installed || st.StarterMissions.MissionIDs == nil || st.MissionPack.PackID != cat.DefaultPack().ID ||
		st.MissionPack.Installed || st.Bootstrap.Complete || st.Bootstrap.StepsTotal != 8 {
		t.Fatalf("fresh status %s", r.body)
	}

	var starter, pack gameSet
	w.civPost("/v1/game/starter-missions/bootstrap", map[string]any{}).wantOK(t, &starter)
	w.civPost("/v1/game/mission-pack/bootstrap", map[string]any{}).wantOK(t, &pack)
	// ada (order enforcer) takes the starter enforcer mission to settled, bob
	// claims the first open one.
	var verify string
	for i, m := range starter.Missions {
		if m.TemplateID == "starter-verify-chain" {
			verify = starter.MissionIDs[i]
		}
	}
	w.step(verify, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
	w.step(verify, "complete", w.tokens["ada"], map[string]any{"result": "verified"}).wantOK(t, nil)
	w.step(verify, "settle", testToken, map[string]any{}).wantOK(t, nil)
	w.step(starter.MissionIDs[0], "claim", w.tokens["bob"], map[string]any{"claimer": "bob"}).wantOK(t, nil)

	r = w.get("/v1/game/status").wantOK(t, &st)
	n := len(starter.MissionIDs)
	if !st.StarterMissions.Installed || !slices.Equal(st.StarterMissions.MissionIDs, starter.MissionIDs) ||
		*st.StarterMissions.InstalledAt != *starter.InstalledAt ||
		!maps.Equal(st.StarterMissions.MissionsByState, map[string]int{"created": n - 2, "claimed": 1, "completed": 0, "settled": 1}) {
		t.Errorf("starter status %s", r.body)
	}
	if !st.MissionPack.Installed || !slices.Equal(st.MissionPack.MissionIDs, pack.MissionIDs) ||
		!slices.Equal(st.ActivePacks, []string{cat.DefaultPack().ID}) ||
		st.MissionPack.MissionsByState["created"] != len(pack.MissionIDs) {
		t.Errorf("pack status %s", r.body)
	}
	if !st.Bootstrap.Complete || st.Bootstrap.StepsDone != 8 || st.Bootstrap.NextStep != nil {
		t.Errorf("bootstrap status %+v", st.Bootstrap)
	}
}
