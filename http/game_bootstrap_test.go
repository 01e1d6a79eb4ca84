package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// bootstrapGuide is GET /v1/game/bootstrap as the tests read it.
type bootstrapGuide struct {
	CatalogVersion string      `json:"catalog_version"`
	Complete       bool        `json:"complete"`
	NextStep       *string     `json:"next_step"`
	Steps          []guideStep `json:"steps"`
}

type guideStep struct {
	ID           string         `json:"id"`
	Title        string         `json:"title"`
	Method       string         `json:"method"`
	Path         string         `json:"path"`
	Body         map[string]any `json:"body"`
	Placeholders map[string]struct {
		About   string   `json:"about"`
		Choices []string `json:"choices"`
	} `json:"placeholders"`
	Done bool   `json:"done"`
	Why  string `json:"why"`
}

func (n *testNode) guide(t *testing.T) bootstrapGuide {
	t.Helper()
	var g bootstrapGuide
	n.get("/v1/game/bootstrap").wantOK(t, &g)
	return g
}

// done lists the ids of the steps done.
func (g bootstrapGuide) done() []string {
	var out []string
	for _, s := range g.Steps {
		if s.Done {
			out = append(out, s.ID)
		}
	}
	return out
}

var guideSteps = []string{"bootstrap-identity", "bind-controller", "set-profile", "install-starter-missions",
	"claim-starter-mission", "complete-starter-mission", "settle-starter-mission", "install-mission-pack"}

// TestBootstrapStepsMarkDone: each step turns done when the node's state shows
// it taken, whoever took it and in whatever order, and the ids the node knows
// are filled in.
func TestBootstrapStepsMarkDone(t *testing.T) {
	n := newCivNode(t)
	g := n.guide(t)
	var ids []string
	for _, s := range g.Steps {
		ids = append(ids, s.ID)
		if s.Title == "" || s.Why == "" || s.Method != http.MethodPost || !strings.HasPrefix(s.Path, "/v1/") || s.Body == nil {
			t.Errorf("step %+v", s)
		}
	}
	if !slices.Equal(ids, guideSteps) || g.Complete || *g.NextStep != "bootstrap-identity" || len(g.done()) != 0 {
		t.Fatalf("fresh guide: %v, next %v, done %v", ids, *g.NextStep, g.done())
	}
	want := func(step string, done ...string) bootstrapGuide {
		t.Helper()
		g := n.guide(t)
		if !slices.Equal(g.done(), done) {
			t.Fatalf("after %s: done %v, want %v", step, g.done(), done)
		}
		return g
	}

	// Installing the starter set first is fine: its step alone is done.
	n.civPost("/v1/game/starter-missions/bootstrap", map[string]any{}).wantOK(t, nil)
	want("install-starter-missions", "install-starter-missions")
	did, _ := n.bootstrap(map[string]any{"display_name": "Ada", "public_id": "ada"})
	g = want("bootstrap", "bootstrap-identity", "install-starter-missions")
	if b := g.Steps[1].Body; b["agent_did"] != did || len(g.Steps[1].Placeholders) != 1 {
		t.Errorf("bind step after bootstrap: %v %v", b, g.Steps[1].Placeholders)
	}
	// Without a binding no claim is proposed.
	if g.Steps[4].Path != "/v1/core/missions/{mission_id}/claim" || g.Steps[4].Body["claimer"] != "{public_id}" {
		t.Errorf("claim step without a bound agent: %s %v", g.Steps[4].Path, g.Steps[4].Body)
	}
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": did, "controller_kind": "local_model",
		"controller_ref": "runtime-1"}).wantOK(t, nil)
	g = want("binding", "bootstrap-identity", "bind-controller", "install-starter-missions")
	// ada has no role: only the starter missions open to any role are proposed.
	var starter gameSet
	n.get("/v1/game/starter-missions").wantOK(t, &starter)
	if g.Steps[4].Path != "/v1/core/missions/"+starter.MissionIDs[0]+"/claim" || g.Steps[4].Body["claimer"] != "ada" ||
		len(g.Steps[4].Placeholders) != 0 {
		t.Errorf("claim step: %s %v %v", g.Steps[4].Path, g.Steps[4].Body, g.Steps[4].Placeholders)
	}
	n.civPost("/v1/civilization/profile", map[string]any{"agent_did": did, "role": "archivist"}).wantOK(t, nil)
	want("profile", "bootstrap-identity", "bind-controller", "set-profile", "install-starter-missions")

	// Someone else claims the first two open missions: the node proposes the
	// archivist's mission to ada.
	other, _ := n.bootstrap(map[string]any{"display_name": "Bob", "public_id": "bob"})
	n.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": other, "controller_kind": "local_model",
		"controller_ref": "runtime-2"}).wantOK(t, nil)
	for _, id := range starter.MissionIDs[:2] {
		n.civPost("/v1/core/missions/"+id+"/claim", map[string]any{"claimer": "bob"}).wantOK(t, nil)
	}
	g = want("claim", "bootstrap-identity", "bind-controller", "set-profile", "install-starter-missions", "claim-starter-mission")
	if g.Steps[5].Path != "/v1/core/missions/"+starter.MissionIDs[0]+"/complete" {
		t.Errorf("complete step: %s", g.Steps[5].Path)
	}
	n.civPost("/v1/core/missions/"+starter.MissionIDs[1]+"/complete", map[string]any{"result": "r"}).wantOK(t, nil)
	g = want("complete", "bootstrap-identity", "bind-controller", "set-profile", "install-starter-missions",
		"claim-starter-mission", "complete-starter-mission")
	if g.Steps[6].Path != "/v1/core/missions/"+starter.MissionIDs[1]+"/settle" || len(g.Steps[6].Placeholders) != 0 {
		t.Errorf("settle step: %s %v", g.Steps[6].Path, g.Steps[6].Placeholders)
	}
	n.civPost(g.Steps[6].Path, map[string]any{}).wantOK(t, nil)
	g = want("settle", guideSteps[:7]...)
	if *g.NextStep != "install-mission-pack" || g.Complete {
		t.Errorf("next %v, complete %v", *g.NextStep, g.Complete)
	}
	n.civPost("/v1/game/mission-pack/bootstrap", map[string]any{}).wantOK(t, nil)
	if g = want("pack", guideSteps...); !g.Complete || g.NextStep != nil {
		t.Errorf("complete %v, next %v", g.Complete, g.NextStep)
	}
}

// placeholderPattern finds the "{name}" placeholders of a step.
var placeholderPattern = regexp.MustCompile(`\{([a-z_]+)\}`)

// TestFollowBootstrapAlone is the game layer's "done when": a fresh node is
// taken from nothing to a claimed starter mission by following
// GET /v1/game/bootstrap alone. The client reads the sequence, takes the
// first step not done, fills in its placeholders by the documented rule
// (docs/game.md): a placeholder with choices takes the first choice, one
// without takes the client's own value for it (its display name, slug,
// controller reference, result), and sends exactly the step's method, path
// and body with the owner token. It knows no ids but what the steps carry.
func TestFollowBootstrapAlone(t *testing.T) {
	n := newCivNode(t)
	own := map[string]string{"display_name": "Ada Lovelace", "public_id": "ada", "controller_ref": "runtime-1", "result": "done"}
	fill := func(s string, ph map[string][]string) string {
		return placeholderPattern.ReplaceAllStringFunc(s, func(m string) string {
			name := m[1 : len(m)-1]
			choices, listed := ph[name]
			switch {
			case !listed:
				t.Fatalf("placeholder %s is not explained by its step", m)
			case len(choices) > 0:
				return choices[0]
			case own[name] != "":
				return own[name]
			}
			t.Fatalf("placeholder %s needs a value the client cannot know", m)
			return ""
		})
	}
	var taken []string
	for round := 0; ; round++ {
		if round > len(guideSteps) {
			t.Fatalf("no claim after %d steps: %v", round, taken)
		}
		g := n.guide(t)
		i := slices.IndexFunc(g.Steps, func(s guideStep) bool {
			return s.ID == "claim-starter-mission"
		})
		if g.Steps[i].Done {
			break
		}
		step := g.Steps[slices.IndexFunc(g.Steps, func(s guideStep) bool {
			return !s.Done
		})]
		if *g.NextStep != step.ID {
			t.Errorf("next_step %s, first step not done %s", *g.NextStep, step.ID)
		}
		ph := map[string][]string{}
		for name, p := range step.Placeholders {
			ph[name] = p.Choices
		}
		body := map[string]any{}
		for k, v := range step.Body {
			if s, ok := v.(string); ok {
				v = fill(s, ph)
			}
			body[k] = v
		}
		raw, _ := json.Marshal(body)
		r := n.civSend(step.Method, fill(step.Path, ph), testToken, string(raw))
		if r.status != http.StatusOK {
			t.Fatalf("step %s: %s %s %s → %d %s", step.ID, step.Method, step.Path, raw, r.status, r.body)
		}
		taken = append(taken, fmt.Sprintf("%s %s", step.Method, fill(step.Path, ph)))
		if n.guide(t).Steps[slices.IndexFunc(guideSteps, func(id string) bool { return id == step.ID })].Done != true {
			t.Fatalf("step %s is not done after it succeeded", step.ID)
		}
	}
	var starter gameSet
	n.get("/v1/game/starter-missions").wantOK(t, &starter)
	claimed := 0
	for _, m := range starter.Missions {
		if m.Mission.State == "claimed" && *m.Mission.Claimer == "ada" {
			claimed++
		}
	}
	if claimed != 1 || len(taken) != 5 {
		t.Errorf("ada holds %d starter missions after %v", claimed, taken)
	}
}
