package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// gameNode is a node wired as cmd wires it (core.Open), with the missions and
// the game: durable queries, and the commands over the decision views.
type gameNode struct {
	log      *eventlog.Log
	missions *projections.Missions // durable
	game     *projections.Game     // durable
	mission  *commands.Mission
	install  *commands.Game
}

// newGameNode wires a node whose mission commands accept missionCat's roles and
// factions and whose game installs from gameCat (nil: the built-in catalog).
func newGameNode(t *testing.T, missionCat, gameCat *catalog.Catalog) *gameNode {
	t.Helper()
	c := openCore(t, missionCat)
	n := &gameNode{log: c.Log, missions: c.Missions, game: c.GameState, mission: c.Mission, install: c.Game}
	if gameCat != missionCat {
		var err error
		if n.install, err = commands.NewGame(commands.GameOptions{Log: c.Log, Mission: c.Mission,
			Game: c.GameState.Decisions(), Catalog: gameCat}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func TestNewGameNeedsItsParts(t *testing.T) {
	n := newGameNode(t, nil, nil)
	for _, opts := range []commands.GameOptions{
		{Mission: n.mission, Game: n.game},
		{Log: n.log, Game: n.game},
		{Log: n.log, Mission: n.mission},
	} {
		if _, err := commands.NewGame(opts); err == nil {
			t.Errorf("NewGame(%+v) accepted", opts)
		}
	}
}

// TestInstallPublishesThroughTheMissionRules: each install appends one
// mission.created per template — exactly the event POST /v1/core/missions
// appends for the template's fields, published by the first governed subnet as
// planetary_government — then its installed event naming them; a repeat
// appends nothing.
func TestInstallPublishesThroughTheMissionRules(t *testing.T) {
	cat := catalog.Default()
	pack := cat.DefaultPack()
	for _, tc := range []struct {
		name      string
		install   func(*commands.Game, commands.Actor) (commands.InstallResult, error)
		templates []catalog.MissionTemplate
		typ       string
		packID    string
	}{
		{"starter", func(g *commands.Game, a commands.Actor) (commands.InstallResult, error) {
			return g.InstallStarterMissions(context.Background(), a, commands.InstallInput{})
		}, cat.Starter(), events.TypeGameStarterMissionsInstalled, ""},
		{"pack", func(g *commands.Game, a commands.Actor) (commands.InstallResult, error) {
			return g.InstallMissionPack(context.Background(), a, commands.InstallInput{})
		}, cat.PackTemplates(pack.ID), events.TypeGameMissionPackInstalled, pack.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newGameNode(t, nil, nil)
			a := owner
			a.Governs = []string{"rim", "genesis"}
			res, err := tc.install(n.install, a)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Published || len(res.Events) != len(tc.templates)+1 {
				t.Fatalf("published %v, %d events for %d templates", res.Published, len(res.Events), len(tc.templates))
			}
			var missionIDs, templateIDs []string
			for i, tpl := range tc.templates {
				ev := res.Events[i]
				var got events.MissionCreated
				if err := json.Unmarshal(ev.Payload, &got); ev.Type != events.TypeMissionCreated || err != nil {
					t.Fatalf("event %d: %s %s (%v)", i, ev.Type, ev.Payload, err)
				}
				want := events.MissionCreated{MissionID: got.MissionID, Title: tpl.Title, Description: tpl.Description,
					Publisher: "rim", PublisherKind: "planetary_government", IssuerDID: n.log.NodeDID(),
					Domain: tpl.Domain, SubnetID: "rim", RequiredRole: tpl.RequiredRole, RequiredFaction: tpl.RequiredFaction,
					Reward: events.Reward(tpl.Reward), Payload: tpl.Payload}
				if wantJSON := canonicalJSON(t, want); string(ev.Payload) != wantJSON {
					t.Errorf("template %s published as\n %s\nwant\n %s", tpl.ID, ev.Payload, wantJSON)
				}
				if rec, ok := found(n.missions.Mission(got.MissionID)); !ok || rec.State != "created" || rec.ZoneID != nil {
					t.Errorf("mission %s: %+v, %v", got.MissionID, rec, ok)
				}
				missionIDs, templateIDs = append(missionIDs, got.MissionID), append(templateIDs, tpl.ID)
			}
			last := res.Events[len(res.Events)-1]
			if last.Type != tc.typ {
				t.Fatalf("last event %s, want %s", last.Type, tc.typ)
			}
			var rec struct {
				CatalogVersion string   `json:"catalog_version"`
				PackID         *string  `json:"pack_id"`
				SubnetID       string   `json:"subnet_id"`
				TemplateIDs    []string `json:"template_ids"`
				MissionIDs     []string `json:"mission_ids"`
				InstalledBy    string   `json:"installed_by"`
			}
			if err := json.Unmarshal(last.Payload, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.CatalogVersion != cat.Version || rec.SubnetID != "rim" || rec.InstalledBy != n.log.NodeDID() ||
				!slices.Equal(rec.TemplateIDs, templateIDs) || !slices.Equal(rec.MissionIDs, missionIDs) ||
				(tc.packID == "") != (rec.PackID == nil) || rec.PackID != nil && *rec.PackID != tc.packID {
				t.Errorf("installed payload %s", last.Payload)
			}

			tip := n.log.Tip().Seq
			again, err := tc.install(n.install, a)
			if err != nil || again.Published || len(again.Events) != 0 || n.log.Tip().Seq != tip {
				t.Errorf("repeat: %+v, %v; tip %d → %d", again, err, tip, n.log.Tip().Seq)
			}
		})
	}
}

// canonicalJSON is v as the event log stores a payload: RFC 8785.
func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestInstallRefusals: only the owner installs, and only when it governs a
// subnet to publish from; a refusal appends nothing.
func TestInstallRefusals(t *testing.T) {
	n := newGameNode(t, nil, nil)
	ungoverned := owner
	ungoverned.Governs = nil
	ctx := context.Background()
	for _, a := range []commands.Actor{agentActor("did:key:z6MkAgent"), observer, ungoverned} {
		tip := n.log.Tip().Seq
		_, err := n.install.InstallStarterMissions(ctx, a, commands.InstallInput{})
		(&idNode{log: n.log}).refused(t, err, tip, commands.KindForbidden, "forbidden", "")
		_, err = n.install.InstallMissionPack(ctx, a, commands.InstallInput{})
		(&idNode{log: n.log}).refused(t, err, tip, commands.KindForbidden, "forbidden", "")
	}
	if must(n.game.StarterInstalled()) || len(must(n.game.Packs())) != 0 {
		t.Error("a refused install was recorded")
	}
}

// TestInstallAppliesTheMissionRules: a template the mission commands refuse
// (here a role the mission commands' catalog lacks) fails the whole install
// as a fault of the node, not of the caller's empty body, and appends nothing.
func TestInstallAppliesTheMissionRules(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(catalog.DefaultJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["roles"] = append(doc["roles"].([]any), map[string]any{"id": "pilot", "title": "Pilot",
		"description": "Flies couriers.", "focus_domains": []any{"logistics"}})
	for _, tpl := range doc["mission_templates"].([]any) {
		if m := tpl.(map[string]any); m["id"] == "starter-check-relay" {
			m["required_role"] = "pilot"
		}
	}
	raw, _ := json.Marshal(doc)
	gameCat, err := catalog.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	n := newGameNode(t, catalog.Default(), gameCat)
	tip := n.log.Tip().Seq
	_, err = n.install.InstallStarterMissions(context.Background(), owner, commands.InstallInput{})
	var ce *commands.Error
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("err = %v, want an internal error", err)
	}
	if n.log.Tip().Seq != tip || must(n.missions.Count()) != 0 || must(n.game.StarterInstalled()) {
		t.Errorf("a failed install appended: tip %d → %d", tip, n.log.Tip().Seq)
	}
}
