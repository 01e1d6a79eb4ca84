package http

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
)

// interopDir holds the TypeScript client and its pinned dependencies.
var interopDir = filepath.Join("testdata", "mcp-interop")

// TestMCPTypeScriptClient runs the official TypeScript MCP SDK's client
// (testdata/mcp-interop/client.mjs) against a real server: it initialises,
// lists the tools and calls list_missions and invoke_servicenet_agent_sync.
// It needs node and the client's node_modules (npm ci --prefix
// http/testdata/mcp-interop); without them it is skipped, except in CI
// (CI=true), where it fails.
func TestMCPTypeScriptClient(t *testing.T) {
	node := needNode(t)
	if _, err := os.Stat(filepath.Join(interopDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		testtool.Missing(t, "the TypeScript client's dependencies are not installed: run `npm ci --prefix http/testdata/mcp-interop`")
	}

	w := newMCPWorld(t)
	w.create(w.tokens["pub"], nil)
	w.advance("claimed")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = interopDir
	cmd.Env = append(os.Environ(), "CIVNODE_URL="+w.url, "CIVNODE_TOKEN="+testToken, "CIVNODE_AGENT=slow")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.Bytes(), stdout.Bytes())
	}
	t.Logf("TypeScript client summary: %s", stdout.Bytes())

	type answer struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Text              []string        `json:"text"`
	}
	var summary struct {
		ProtocolVersion string  `json:"protocolVersion"`
		SessionID       *string `json:"sessionId"`
		Server          struct {
			Name string `json:"name"`
		} `json:"server"`
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
		ListMissions answer `json:"list_missions"`
		Invoke       answer `json:"invoke_servicenet_agent_sync"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil {
		t.Fatalf("summary: %v: %s", err, stdout.Bytes())
	}
	if summary.Server.Name != "civnode" || summary.ProtocolVersion == "" || summary.SessionID != nil {
		t.Errorf("server %q, protocol %q, session %v: want civnode, a negotiated version and no session",
			summary.Server.Name, summary.ProtocolVersion, summary.SessionID)
	}

	var names []string
	for _, tool := range summary.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema["type"] != "object" {
			t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, allMCPTools) {
		t.Errorf("tools %v, want %v", names, allMCPTools)
	}

	route := w.get("/v1/core/missions").wantOK(t, nil)
	if summary.ListMissions.IsError || len(summary.ListMissions.Text) != 1 || summary.ListMissions.Text[0] != string(route.body) {
		t.Errorf("list_missions answered %+v, want the route's body %s", summary.ListMissions, route.body)
	}
	if !sameJSON(t, summary.ListMissions.StructuredContent, route.body) {
		t.Errorf("list_missions structuredContent %s, want GET /v1/core/missions's %s", summary.ListMissions.StructuredContent, route.body)
	}

	var task map[string]any
	if err := json.Unmarshal(summary.Invoke.StructuredContent, &task); err != nil || summary.Invoke.IsError {
		t.Fatalf("invoke_servicenet_agent_sync answered %+v (%v)", summary.Invoke, err)
	}
	if task["status"] != "completed" || task["agent_id"] != "slow" || task["receipt_id"] == nil || task["task_id"] == nil ||
		!reflect.DeepEqual(task["result"], map[string]any{"answer": float64(42)}) {
		t.Errorf("invoke_servicenet_agent_sync answered %v, want slow's completed task", task)
	}
	if len(summary.Invoke.Text) != 1 || !sameJSON(t, []byte(summary.Invoke.Text[0]), summary.Invoke.StructuredContent) {
		t.Errorf("invoke text %v differs from its structuredContent", summary.Invoke.Text)
	}
	w.registry.mu.Lock()
	polls := w.registry.polls[task["task_id"].(string)]
	w.registry.mu.Unlock()
	if polls != 2 {
		t.Errorf("the task was polled %d times, want 2 (running, then completed)", polls)
	}
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}
