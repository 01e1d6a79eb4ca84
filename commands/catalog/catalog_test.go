package catalog

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestDefault holds the built-in catalog to the rules and to what the game
// layer promises about it: the factions and roles of docs/game.md, a starter mission for
// every role open to every faction, and a default pack.
func TestDefault(t *testing.T) {
	c, err := Parse(defaultJSON)
	if err != nil {
		t.Fatalf("the built-in catalog does not parse: %v", err)
	}
	if got := Default(); !reflect.DeepEqual(got, c) {
		t.Fatalf("Default() differs from Parse(default.json)")
	}
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"factions", c.FactionIDs(), []string{"freeport", "order", "frontier"}},
		{"roles", c.RoleIDs(), []string{"broker", "operator", "enforcer", "archivist"}},
		{"strategies", c.StrategyIDs(), []string{"balanced", "aggressive", "cautious", "cooperative"}},
		{"stages", c.StageIDs(), []string{"arrival", "first-contract", "guild", "governance"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	for _, d := range []string{"security", "logistics", "research", "trade"} {
		if !slices.Contains(c.DomainIDs(), d) {
			t.Errorf("domains %v lack %q", c.DomainIDs(), d)
		}
	}

	starter := c.Starter()
	if len(starter) < 6 {
		t.Errorf("%d starter missions, want at least 6", len(starter))
	}
	covered := map[string]bool{}
	for _, m := range starter {
		if m.RequiredFaction != nil {
			t.Errorf("starter mission %s is restricted to faction %s", m.ID, *m.RequiredFaction)
		}
		if m.RequiredRole != nil {
			covered[*m.RequiredRole] = true
		}
	}
	for _, r := range c.RoleIDs() {
		if !covered[r] {
			t.Errorf("no starter mission for role %s", r)
		}
	}

	def := c.DefaultPack()
	if def.ID == "" || !def.Default {
		t.Fatalf("DefaultPack() = %+v, want the default pack", def)
	}
	pack := c.PackTemplates(def.ID)
	if len(pack) < 10 {
		t.Errorf("default pack %s has %d templates, want at least 10", def.ID, len(pack))
	}
	roles, factions := map[string]bool{}, map[string]bool{}
	for _, m := range pack {
		if m.RequiredRole != nil {
			roles[*m.RequiredRole] = true
		}
		if m.RequiredFaction != nil {
			factions[*m.RequiredFaction] = true
		}
	}
	if len(roles) != len(c.Roles) || len(factions) != len(c.Factions) {
		t.Errorf("default pack asks for roles %v and factions %v, want every one of each", roles, factions)
	}
}

// TestRoundTrip: the JSON of a parsed catalog, which GET /v1/game/catalog
// serves, is a valid catalog file that parses to the same catalog.
func TestRoundTrip(t *testing.T) {
	b, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatalf("re-parse: %v", err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("round trip changed the catalog")
	}
	// Nullable references are explicit nulls, not left out.
	if !strings.Contains(string(b), `"required_role":null,"required_faction":null`) {
		t.Errorf("encoding lacks explicit nulls: %.300s", b)
	}
}

func TestAccessors(t *testing.T) {
	c := Default()
	if m, ok := c.Template("starter-survey-genesis"); !ok || m.Domain != "research" || *m.RequiredRole != "archivist" {
		t.Errorf("Template(starter-survey-genesis) = %+v, %v", m, ok)
	}
	if _, ok := c.Template("nope"); ok {
		t.Errorf("Template(nope) found")
	}
	if p, ok := c.Pack("genesis-expansion"); !ok || !p.Default {
		t.Errorf("Pack(genesis-expansion) = %+v, %v", p, ok)
	}
	if _, ok := c.Pack("nope"); ok {
		t.Errorf("Pack(nope) found")
	}
	var ids []string
	for _, m := range c.Starter() {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, c.StarterMissions) {
		t.Errorf("Starter() ids %v, want starter_missions order %v", ids, c.StarterMissions)
	}
	if got := c.PackTemplates("nope"); len(got) != 0 {
		t.Errorf("PackTemplates(nope) = %d templates", len(got))
	}
	if PackSet("x") != "pack:x" {
		t.Errorf("PackSet(x) = %q", PackSet("x"))
	}
	// The payload is kept as an object with sorted keys.
	m, _ := c.Template("starter-first-manifest")
	if string(m.Payload) != `{"cargo":"welcome-manifest","from":"genesis-depot","to":"arrivals-dock"}` {
		t.Errorf("payload = %s", m.Payload)
	}
}

func TestDefaultJSONIsACopy(t *testing.T) {
	b := DefaultJSON()
	b[0] = 'x'
	if DefaultJSON()[0] != '{' {
		t.Errorf("DefaultJSON returned the embedded bytes themselves")
	}
}
