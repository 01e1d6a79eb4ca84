package http

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// A node run without a registry (serve --registry-url ""), wired as cmd
// wires it: core.Open with payment-account keys and no Registry.

func newNoRegistryNode(t *testing.T) (*testNode, *core.Core) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()},
		core.Config{Governs: []string{"genesis"}, Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Servicenet != nil || c.PaymentAccounts == nil {
		t.Fatal("core without a registry: want no servicenet commands and payment accounts")
	}
	n := newTestNodeWith(t, func(o *Options) {
		o.Log, o.Tokens, o.Identity, o.Identities = c.Log, c.Tokens, c.Identity, c.Identities
		o.Mission, o.Missions, o.Game, o.GameState = c.Mission, c.Missions, c.Game, c.GameState
		o.Governs, o.PaymentAccounts = []string{"genesis"}, c.PaymentAccounts
	}, nil)
	n.log = c.Log
	return n, c
}

// registryRoutes are the proxy's routes, with a body each accepts.
var registryRoutes = []struct{ method, path, body string }{
	{http.MethodGet, "/v1/core/servicenet/agents", ""},
	{http.MethodGet, "/v1/core/servicenet/agents/summarizer", ""},
	{http.MethodPost, "/v1/core/servicenet/agents/summarizer/invoke", `{"message":"hello"}`},
	{http.MethodPost, "/v1/core/servicenet/agents/summarizer/tasks/task-1/get", `{}`},
}

func TestServicenetNotConfigured(t *testing.T) {
	n, c := newNoRegistryNode(t)
	observer, err := c.Tokens.Create(context.Background(), commands.Actor{TokenID: ownerTokenID, Kind: commands.ActorOwner},
		commands.TokenKindObserver, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range registryRoutes {
		res := n.request(r.method, r.path, testToken, strings.NewReader(r.body))
		res.wantError(t, http.StatusServiceUnavailable, codeRegistryNotConfigured, "")
		if !strings.Contains(string(res.body), `--registry-url \"\"`) {
			t.Errorf("%s %s: the message does not say how the proxy was turned off: %s", r.method, r.path, res.body)
		}
		if res.header.Get("Retry-After") != "" {
			t.Errorf("%s %s: Retry-After %q: waiting does not configure a registry", r.method, r.path, res.header.Get("Retry-After"))
		}
		// Authentication and the token's kind come first, as on every route.
		n.request(r.method, r.path, "", strings.NewReader(r.body)).wantError(t, http.StatusUnauthorized, codeUnauthorized, "")
		n.request(r.method, r.path, observer.Secret, strings.NewReader(r.body)).wantError(t, http.StatusForbidden, codeForbidden, "")
	}
	// Payment accounts are the node's own and stay served.
	if r := n.request(http.MethodGet, "/v1/admin/payment-accounts", testToken, nil); r.status != http.StatusOK {
		t.Errorf("GET /v1/admin/payment-accounts = %d %s", r.status, r.body)
	}
	// Nothing was recorded.
	if tip := c.Log.Tip().Seq; tip != 1 {
		t.Errorf("tip seq %d after refused registry calls, want 1 (genesis)", tip)
	}
}

func TestMCPServicenetToolsNotConfigured(t *testing.T) {
	n, _ := newNoRegistryNode(t)
	cs := n.mcpSession(t, testToken)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := slices.DeleteFunc(slices.Clone(allMCPTools), func(name string) bool { return slices.Contains(servicenetTools, name) })
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	// A client that knows the tools from another node is told why they are
	// not there, with the route's error body.
	r := n.request(http.MethodPost, "/v1/core/servicenet/agents/summarizer/invoke", testToken, strings.NewReader(`{"message":"hello"}`))
	for _, name := range servicenetTools {
		args := map[string]any{"agent_id": "summarizer", "message": "hello"}
		if name == "get_servicenet_receipt" {
			args = map[string]any{"receipt_id": "rcpt-1"}
		}
		sameAsHTTP(t, callTool(t, cs, name, args), r)
	}
}

// TestServicenetToolNames holds servicenetTools to the tools a node with a
// registry lists, so that registryToolsOff answers for each of them.
func TestServicenetToolNames(t *testing.T) {
	var offered []string
	for _, name := range allMCPTools {
		if strings.Contains(name, "servicenet") {
			offered = append(offered, name)
		}
	}
	got := slices.Sorted(slices.Values(servicenetTools))
	if !slices.Equal(got, offered) {
		t.Errorf("servicenetTools = %v, want %v", got, offered)
	}
}
