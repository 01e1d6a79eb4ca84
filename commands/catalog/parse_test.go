package catalog

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// edit is a change to the default catalog: set value at path, or delete the
// field or item at path when del. Paths are dotted with numeric list indices
// ("mission_templates.3.reward.agent_credit"); an index equal to a list's length
// appends.
type edit struct {
	path  string
	value any
	del   bool
}

func set(path string, v any) edit { return edit{path: path, value: v} }
func del(path string) edit        { return edit{path: path, del: true} }

// edited returns the default catalog file with edits applied.
func edited(t *testing.T, edits ...edit) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal(defaultJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		doc = apply(t, doc, strings.Split(e.path, "."), e)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func apply(t *testing.T, node any, path []string, e edit) any {
	t.Helper()
	key, rest := path[0], path[1:]
	switch n := node.(type) {
	case map[string]any:
		if len(rest) == 0 {
			if e.del {
				delete(n, key)
			} else {
				n[key] = e.value
			}
			return n
		}
		n[key] = apply(t, n[key], rest, e)
		return n
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i > len(n) {
			t.Fatalf("edit %s: bad index %q", e.path, key)
		}
		if len(rest) == 0 {
			switch {
			case e.del:
				return append(n[:i], n[i+1:]...)
			case i == len(n):
				return append(n, e.value)
			}
			n[i] = e.value
			return n
		}
		n[i] = apply(t, n[i], rest, e)
		return n
	}
	t.Fatalf("edit %s: %q is inside a %T", e.path, key, node)
	return nil
}

func pack(id string, def bool) map[string]any {
	return map[string]any{"id": id, "title": "Pack " + id, "description": "A pack.", "default": def}
}

// TestParseRejects: every malformed catalog is refused with the path of the field
// at fault and a message saying what is wrong with it.
func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []edit
		path  string
		msg   string
	}{
		{"unknown top-level field", []edit{set("colour", "blue")}, "colour", "unknown field; the fields here are version, stages, roles"},
		{"unknown reward field", []edit{set("mission_templates.3.reward.agent_credits", 5)}, "mission_templates[3].reward.agent_credits", "unknown field"},
		{"unknown field with an odd name", []edit{set("roles.0.focus domains", []any{})}, `roles[0]["focus domains"]`, "unknown field"},
		{"missing top-level list", []edit{del("domains")}, "domains", "is required"},
		{"missing title", []edit{del("stages.0.title")}, "stages[0].title", "is required"},
		{"missing reward amount", []edit{del("mission_templates.3.reward.capacity")}, "mission_templates[3].reward.capacity", "is required"},
		{"missing reward", []edit{del("mission_templates.3.reward")}, "mission_templates[3].reward", "is required"},
		{"missing sets", []edit{del("mission_templates.8.sets")}, "mission_templates[8].sets", "is required"},

		{"duplicate faction id", []edit{set("factions.2.id", "order")}, "factions[2].id", `"order" is already the id of factions[1]`},
		{"duplicate template id", []edit{set("mission_templates.8.id", "publish-market-index")}, "mission_templates[8].id", `"publish-market-index" is already the id of mission_templates[7]`},
		{"duplicate pack id", []edit{set("mission_packs.1", pack("genesis-expansion", false))}, "mission_packs[1].id", "already the id of mission_packs[0]"},
		{"bad slug", []edit{set("stages.0.id", "Arrival")}, "stages[0].id", `"Arrival" is not an id: 2 to 40 characters of a-z, 0-9 and -`},
		{"slug too short", []edit{set("domains.0.id", "s")}, "domains[0].id", "is not an id"},
		{"slug too long", []edit{set("strategies.0.id", strings.Repeat("b", 41))}, "strategies[0].id", "is not an id"},
		{"id not a string", []edit{set("roles.0.id", 7)}, "roles[0].id", "must be a string, not a number"},

		{"dangling required_role", []edit{set("mission_templates.3.required_role", "pilot")}, "mission_templates[3].required_role", `"pilot" is not a role`},
		{"dangling required_faction", []edit{set("mission_templates.6.required_faction", "pirates")}, "mission_templates[6].required_faction", `"pirates" is not a faction`},
		{"dangling domain", []edit{set("mission_templates.0.domain", "farming")}, "mission_templates[0].domain", `"farming" is not a domain`},
		{"dangling focus domain", []edit{set("roles.1.focus_domains.1", "farming")}, "roles[1].focus_domains[1]", `"farming" is not a domain`},
		{"dangling pack set", []edit{set("mission_templates.6.sets.0", "pack:nope")}, "mission_templates[6].sets[0]", `"nope" is not a mission pack`},
		{"unknown set", []edit{set("mission_templates.0.sets.0", "starters")}, "mission_templates[0].sets[0]", `"starters" is not a set: use "starter" or "pack:<mission pack id>"`},
		{"repeated set", []edit{set("mission_templates.6.sets.1", "pack:genesis-expansion")}, "mission_templates[6].sets[1]", "repeats mission_templates[6].sets[0]"},
		{"dangling starter", []edit{set("starter_missions.2", "nope")}, "starter_missions[2]", `"nope" is not a mission template`},
		{"repeated starter", []edit{set("starter_missions.2", "starter-introduce-yourself")}, "starter_missions[2]", "repeats starter_missions[0]"},
		{"starter outside the starter set", []edit{set("starter_missions.6", "publish-market-index")}, "starter_missions[6]", `mission template "publish-market-index" is not in the starter set`},
		{"starter set member not listed", []edit{del("starter_missions.5")}, "mission_templates[5].sets[0]", `"starter-survey-genesis" is in the starter set but missing from starter_missions`},
		{"repeated focus domain", []edit{set("roles.0.focus_domains.1", "trade")}, "roles[0].focus_domains[1]", "repeats roles[0].focus_domains[0]"},
		{"required_role of the wrong type", []edit{set("mission_templates.3.required_role", 5)}, "mission_templates[3].required_role", "must be a string or null, not a number"},

		{"negative reward", []edit{set("mission_templates.3.reward.agent_credit", -5)}, "mission_templates[3].reward.agent_credit", "must be an integer from 0 to 1000000000000, not -5"},
		{"fractional reward", []edit{set("mission_templates.3.reward.reputation", 1.5)}, "mission_templates[3].reward.reputation", "not 1.5"},
		{"reward above the limit", []edit{set("mission_templates.3.reward.capacity", json.Number("1000000000001"))}, "mission_templates[3].reward.capacity", "not 1000000000001"},
		{"reward beyond int64", []edit{set("mission_templates.3.reward.capacity", json.Number("99999999999999999999"))}, "mission_templates[3].reward.capacity", "not 99999999999999999999"},
		{"payload too large", []edit{set("mission_templates.0.payload", map[string]any{"s": strings.Repeat("x", MaxPayload)})}, "mission_templates[0].payload", "a payload may be at most 65536"},
		{"payload number out of range", []edit{set("mission_templates.0.payload", map[string]any{"a": []any{json.Number("1e999")}})}, "mission_templates[0].payload", "holds the number 1e999"},
		{"reward as a string", []edit{set("mission_templates.3.reward.treasury_share_credit", "10")}, "mission_templates[3].reward.treasury_share_credit", "must be an integer, not a string"},
		{"reward not an object", []edit{set("mission_templates.3.reward", 10)}, "mission_templates[3].reward", "must be an object, not a number"},

		{"no default pack", []edit{set("mission_packs.0.default", false)}, "mission_packs", `no pack is the default; mark exactly one with "default": true`},
		{"two default packs", []edit{set("mission_packs.1", pack("second", true)), set("mission_templates.6.sets.1", "pack:second")}, "mission_packs[1].default", "mission_packs[0] is the default already"},
		{"default not a boolean", []edit{set("mission_packs.0.default", "yes")}, "mission_packs[0].default", "must be true or false, not a string"},
		{"pack without templates", []edit{set("mission_packs.1", pack("empty", false))}, "mission_packs[1]", `mission pack "empty" has no templates; add "pack:empty" to the sets of at least one`},

		{"empty title", []edit{set("stages.0.title", "")}, "stages[0].title", "must not be empty"},
		{"blank title", []edit{set("factions.0.title", "   ")}, "factions[0].title", "must not be empty"},
		{"long title", []edit{set("mission_templates.2.title", strings.Repeat("é", 201))}, "mission_templates[2].title", "must be at most 200 characters, not 201"},
		{"title with a line break", []edit{set("roles.2.title", "Enforcer\nof law")}, "roles[2].title", "must not contain control characters"},
		{"empty description", []edit{set("mission_packs.0.description", "")}, "mission_packs[0].description", "must not be empty"},
		{"description with a tab", []edit{set("domains.1.description", "a\tb")}, "domains[1].description", "other than newline"},
		{"long description", []edit{set("domains.1.description", strings.Repeat("x", 4001))}, "domains[1].description", "at most 4000"},

		{"empty list", []edit{set("factions", []any{})}, "factions", "must hold at least one faction"},
		{"empty focus domains", []edit{set("roles.0.focus_domains", []any{})}, "roles[0].focus_domains", "must hold at least one domain"},
		{"empty starter list", []edit{set("starter_missions", []any{})}, "starter_missions", "must hold at least one mission template"},
		{"list of the wrong type", []edit{set("roles", map[string]any{})}, "roles", "must be an array, not an object"},
		{"entry not an object", []edit{set("mission_templates.2", "x")}, "mission_templates[2]", "must be an object, not a string"},
		{"payload not an object", []edit{set("mission_templates.0.payload", []any{})}, "mission_templates[0].payload", "must be an object, not an array"},
		{"null payload", []edit{set("mission_templates.0.payload", nil)}, "mission_templates[0].payload", "must be an object, not null"},
		{"empty version", []edit{set("version", "")}, "version", `"" is not a version`},
		{"version with a space", []edit{set("version", "2026 11")}, "version", "is not a version"},
		{"version not a string", []edit{set("version", 2026)}, "version", "must be a string, not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, edited(t, tc.edits...), tc.path, tc.msg)
		})
	}
}

// TestParseRejectsText covers what only raw text can express.
func TestParseRejectsText(t *testing.T) {
	valid := string(defaultJSON)
	deep := `{"mission_templates":[{"payload":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}]}`
	for _, tc := range []struct {
		name, text, path, msg string
	}{
		{"empty file", "", "", "the file is empty"},
		{"only white space", " \n ", "", "the file is empty"},
		{"not an object", `["version"]`, "", "the catalog must be a JSON object, not an array"},
		{"syntax error", "{\n  \"version\": \"1\",\n}", "", "invalid JSON at line 3, column 1: invalid character '}' looking for beginning of object key string"},
		{"truncated", "{\n  \"version\": \"1\"", "", "invalid JSON at line 2, column 17: the file ends in the middle of a value"},
		{"repeated key", `{"version":"1","version":"2"}`, "version", "appears twice in one object"},
		{"repeated nested key", strings.Replace(valid, `"id": "arrival",`, `"id": "arrival", "id": "again",`, 1), "stages[0].id", "appears twice in one object"},
		{"data after the object", valid + "{}", "", "more data after the catalog object"},
		{"invalid UTF-8", "{\"version\":\"\xff\"}", "", "invalid JSON at line 1, column 13: the file is not valid UTF-8"},
		{"nested too deep", deep, "mission_templates[0].payload.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a", "nested more than 32 levels deep"},
		{"too large", valid + strings.Repeat(" ", MaxSize), "", "a catalog may be at most 1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, []byte(tc.text), tc.path, tc.msg)
		})
	}
}

func wantError(t *testing.T, data []byte, path, msg string) {
	t.Helper()
	c, err := Parse(data)
	if err == nil {
		t.Fatalf("Parse accepted the catalog (version %q)", c.Version)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is a %T, want *Error", err, err)
	}
	if ce.Path != path || !strings.Contains(ce.Message, msg) {
		t.Errorf("error = %q\nwant path %q and a message containing %q", err, path, msg)
	}
	if path != "" && !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("Error() = %q does not start with the path", err)
	}
}

// TestParseAccepts: what the rules allow but the default catalog does not show.
func TestParseAccepts(t *testing.T) {
	c, err := Parse(edited(t,
		del("mission_templates.0.required_role"), // left out: anyone may claim
		del("mission_templates.0.payload"),       // left out: {}
		set("domains.0.description", "Line one.\nLine two."),
		set("mission_packs.1", pack("second", false)), // default left false
		del("mission_packs.1.default"),
		set("mission_templates.6.sets.1", "pack:second"),
		set("mission_templates.1.payload", map[string]any{"html": "<b>&</b>", "n": json.Number("12345678901234567890")}),
		set("version", "2027.1.0-rc.1+local"),
	))
	if err != nil {
		t.Fatal(err)
	}
	m := c.MissionTemplates[0]
	if m.RequiredRole != nil || string(m.Payload) != "{}" {
		t.Errorf("template 0: required_role %v, payload %s; want nil and {}", m.RequiredRole, m.Payload)
	}
	if got := string(c.MissionTemplates[1].Payload); got != `{"html":"<b>&</b>","n":12345678901234567890}` {
		t.Errorf("payload kept as %s, want the text and the number as written", got)
	}
	if c.DefaultPack().ID != "genesis-expansion" || len(c.PackTemplates("second")) != 1 {
		t.Errorf("packs: default %q, second has %d templates", c.DefaultPack().ID, len(c.PackTemplates("second")))
	}
}

// FuzzParse: Parse never panics, refuses with an *Error, and whatever it accepts
// survives a round trip through its own encoding.
func FuzzParse(f *testing.F) {
	f.Add(defaultJSON)
	f.Add([]byte(`{"version":"1"}`))
	f.Add([]byte(`[{"a":[1,2,{"b":null}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is a %T", err, err)
			}
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(b); err != nil {
			t.Fatalf("re-parse of an accepted catalog: %v", err)
		}
	})
}
