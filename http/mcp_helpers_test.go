package http

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// fakeRegistry is the agent registry of the MCP tests (docs/servicenet.md). Agent
// "echo" completes at once with {"echo": <message>}; agent "slow" accepts,
// and its task is running at its first poll and completed, with
// {"answer": 42}, from the second on; agent "stuck" accepts a task that never
// ends. Any other agent is 404.
type fakeRegistry struct {
	*httptest.Server
	mu    sync.Mutex
	tasks int            // tasks accepted so far
	polls map[string]int // task_id → polls so far
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{polls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/agents/{agent_id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("agent_id")
		if id != "echo" && id != "slow" && id != "stuck" {
			registryAnswer(w, http.StatusNotFound, map[string]any{"error": "no such agent"})
			return
		}
		registryAnswer(w, http.StatusOK, map[string]any{"agent_id": id, "name": "Agent " + id,
			"description": "A test agent.", "input_schema": map[string]any{"type": "object",
				"properties": map[string]any{"text": map[string]any{"type": "string"}}}})
	})
	mux.HandleFunc("POST /v1/agents/{agent_id}/invoke", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Message string `json:"message"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			registryAnswer(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		switch r.PathValue("agent_id") {
		case "echo":
			registryAnswer(w, http.StatusOK, map[string]any{"status": "completed", "result": map[string]any{"echo": req.Message}})
		case "slow", "stuck":
			f.mu.Lock()
			f.tasks++
			n := f.tasks
			f.mu.Unlock()
			registryAnswer(w, http.StatusOK, map[string]any{"status": "accepted",
				"receipt_id": fmt.Sprintf("rcpt-%d", n), "task_id": fmt.Sprintf("%s-task-%d", r.PathValue("agent_id"), n)})
		default:
			registryAnswer(w, http.StatusNotFound, map[string]any{"error": "no such agent"})
		}
	})
	mux.HandleFunc("POST /v1/agents/{agent_id}/tasks/{task_id}/get", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("task_id")
		f.mu.Lock()
		f.polls[id]++
		n := f.polls[id]
		f.mu.Unlock()
		if n == 1 || r.PathValue("agent_id") == "stuck" {
			registryAnswer(w, http.StatusOK, map[string]any{"task_id": id, "status": "running"})
			return
		}
		registryAnswer(w, http.StatusOK, map[string]any{"task_id": id, "status": "completed", "result": map[string]any{"answer": 42}})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func registryAnswer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// mcpWorld is the mission world of the mission tests on a node that also
// proxies a fake registry, wired as cmd/civnode wires it (core.Open).
type mcpWorld struct {
	*missionWorld
	registry *fakeRegistry
}

func newMCPWorld(t *testing.T) *mcpWorld {
	t.Helper()
	reg := newFakeRegistry(t)
	key := ed25519.NewKeyFromSeed(testSeed)
	c, client := registryCore(t, reg.URL)
	// Polls close together, so that a sync invoke takes milliseconds.
	sn, err := commands.NewServicenet(commands.ServicenetOptions{Log: c.Log, Registry: client,
		Model: c.Receipts.Decisions(), Accounts: c.PaymentAccounts, PollInterval: 5 * time.Millisecond, PollMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	opts := wired(Options{OwnerToken: testToken, Logger: discardLogger(), Governs: []string{"genesis"}}, c)
	opts.Servicenet = sn
	s := New(opts)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	n := &civNode{core: c, key: key, read: c.Identities, mread: c.Missions, gread: c.GameState,
		cmd: c.Identity, mcmd: c.Mission, gcmd: c.Game, tokens: c.Tokens,
		testNode: &testNode{t: t, log: c.Log, srv: s, url: hs.URL}}
	return &mcpWorld{missionWorld: newMissionWorldOn(t, n), registry: reg}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect connects the SDK's own client to the node's /mcp with token,
// speaking protocol version ("" for the client's latest).
func (n *testNode) mcpConnect(t *testing.T, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "civnode-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: n.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}, Timeout: 30 * time.Second}, MaxRetries: -1,
		DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

// mcpSession is mcpConnect that must succeed.
func (n *testNode) mcpSession(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := n.mcpConnect(t, token, "")
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	return cs
}

// callTool calls a tool, which must answer (a refusal is a result too).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// toolText is a result's one text content, checked to carry the same JSON as
// its structuredContent.
func toolText(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	var fromText any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		t.Fatalf("text content is not JSON: %v: %s", err, tc.Text)
	}
	if !reflect.DeepEqual(fromText, normalize(t, res.StructuredContent)) {
		t.Errorf("text content %s differs from structuredContent %v", tc.Text, res.StructuredContent)
	}
	return []byte(tc.Text)
}

// normalize is v as encoding/json decodes it into any.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAsHTTP checks that a tool's result is the HTTP response r: the route's
// body byte for byte as text and as structuredContent, an error result when
// the route failed.
func sameAsHTTP(t *testing.T, res *mcp.CallToolResult, r response) {
	t.Helper()
	text := toolText(t, res)
	if res.IsError != (r.status != http.StatusOK) {
		t.Errorf("isError = %v, but the route answered %d %s", res.IsError, r.status, r.body)
	}
	if string(text) != string(r.body) {
		t.Errorf("tool answered\n%s\nthe route answered %d\n%s", text, r.status, r.body)
	}
	var want any
	if err := json.Unmarshal(r.body, &want); err != nil {
		t.Fatalf("route body: %v: %s", err, r.body)
	}
	if got := normalize(t, res.StructuredContent); !reflect.DeepEqual(got, want) {
		t.Errorf("structuredContent = %v, want the route's body %v", got, want)
	}
}

// readAll reads and closes a body.
func readAll(t *testing.T, r io.ReadCloser) []byte {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// registryCore opens an in-memory node wired as cmd wires it (governing
// genesis), whose registry client, without retries, calls url.
func registryCore(t *testing.T, url string) (*core.Core, *servicenet.Client) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	client, err := servicenet.New(servicenet.Config{BaseURL: url,
		NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign:    func(msg []byte) []byte { return ed25519.Sign(key, msg) },
		Retries: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()},
		core.Config{Governs: []string{"genesis"}, Keys: servicenet.NewKeystore(t.TempDir()), Registry: client})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, client
}
