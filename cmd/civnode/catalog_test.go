package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/commands/catalog"
)

// pilotCatalog replaces every built-in faction, role and strategy.
const pilotCatalog = `{
  "version": "test.1",
  "stages": [{"id": "start", "title": "Start", "description": "The only stage."}],
  "roles": [{"id": "pilot", "title": "Pilot", "description": "Flies.", "focus_domains": ["transport"]}],
  "factions": [{"id": "guild", "title": "Guild", "description": "The guild."}],
  "strategies": [{"id": "bold", "title": "Bold", "description": "Bold."}],
  "domains": [{"id": "transport", "title": "Transport", "description": "Moving things."}],
  "mission_templates": [{"id": "first-flight", "title": "First flight", "description": "Fly once.",
    "domain": "transport", "required_role": "pilot", "required_faction": null,
    "reward": {"agent_credit": 1, "reputation": 1, "capacity": 0, "treasury_share_credit": 0},
    "payload": {}, "sets": ["starter", "pack:basics"]}],
  "mission_packs": [{"id": "basics", "title": "Basics", "description": "The basics.", "default": true}],
  "starter_missions": ["first-flight"]
}`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeRefusesBadCatalog: a catalog file that is missing or invalid stops
// serve before it creates anything or listens, with exit status 1 and a message
// naming the file and the field at fault.
func TestServeRefusesBadCatalog(t *testing.T) {
	badRef := strings.Replace(string(catalog.DefaultJSON()), `"required_role": "operator"`, `"required_role": "pilot"`, 1)
	for _, tc := range []struct {
		name, content, want string
	}{
		{"dangling role", badRef, `: mission_templates[3].required_role: "pilot" is not a role`},
		{"syntax error", "{\n  \"version\": \"1\",\n}\n", ": invalid JSON at line 3, column 1: "},
		{"unknown field", strings.Replace(pilotCatalog, `"default": true`, `"default": true, "defualt": false`, 1), `: mission_packs[0].defualt: unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "catalog.json", tc.content)
			dir := filepath.Join(t.TempDir(), "node")
			res := runCLI(t, nil, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--catalog", path)
			if res.code != 1 || res.stdout != "" {
				t.Fatalf("code %d, stdout %q; want 1 and no listening line (stderr %q)", res.code, res.stdout, res.stderr)
			}
			if want := "civnode: catalog " + path + tc.want; !strings.HasPrefix(res.stderr, want) {
				t.Errorf("stderr = %q\nwant it to start with %q", res.stderr, want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("data dir created despite the bad catalog (stat: %v)", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.json")
		res := runCLI(t, nil, "serve", "--data-dir", filepath.Join(t.TempDir(), "node"), "--addr", "127.0.0.1:0", "--catalog", path)
		if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "catalog: open "+path) {
			t.Errorf("code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
		}
	})
}

// TestServeWithCatalog: the catalog given to serve is the one the node serves
// and the one profiles are checked against; the built-in roles no longer apply.
func TestServeWithCatalog(t *testing.T) {
	path := writeFile(t, "pilot.json", pilotCatalog)
	n := startNodeArgs(t, filepath.Join(t.TempDir(), "node"), "--catalog", path)

	body := getJSON(t, n.url+"/v1/game/catalog", n.token, 200, nil)
	served, err := catalog.Parse(body)
	if err != nil {
		t.Fatalf("served catalog: %v", err)
	}
	if served.Version != "test.1" || len(served.Roles) != 1 || served.Roles[0].ID != "pilot" {
		t.Errorf("served catalog %s, want the file's", body)
	}

	var boot struct {
		AgentDID string `json:"agent_did"`
	}
	catalogPost(t, n, "/v1/civilization/bootstrap-identity",
		`{"display_name":"Ace","role":"pilot","faction":"guild","strategy":"bold"}`, 200, &boot)
	var refused map[string]any
	catalogPost(t, n, "/v1/civilization/profile", `{"agent_did":"`+boot.AgentDID+`","role":"broker"}`, 400, &refused)
	if refused["code"] != "invalid_field" || refused["field"] != "role" {
		t.Errorf("profile with a built-in role: %v, want invalid_field on role", refused)
	}
	catalogPost(t, n, "/v1/civilization/profile", `{"agent_did":"`+boot.AgentDID+`","role":"pilot","strategy":"bold"}`, 200, nil)
	n.stop(t)
}

// catalogPost posts body with the owner token, requires status want and decodes
// the answer into v (if not nil).
func catalogPost(t *testing.T, n *node, path, body string, want int, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, n.url+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+n.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("POST %s: status %d, want %d; body %s", path, resp.StatusCode, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("POST %s: decode %s: %v", path, b, err)
		}
	}
}
