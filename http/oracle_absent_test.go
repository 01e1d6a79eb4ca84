package http

import (
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// TestNoOracleRoute holds the rule that the oracle is operated by
// command line only (docs/oracle.md): a server with
// every part wired registers no route with "oracle" in it, and the paths an
// HTTP client would guess answer 404.
func TestNoOracleRoute(t *testing.T) {
	key := ed25519.NewKeyFromSeed(testSeed)
	pub := key.Public().(ed25519.PublicKey)
	client, err := servicenet.New(servicenet.Config{BaseURL: "http://127.0.0.1:1", NodeDID: eventlog.DIDKey(pub),
		Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()},
		core.Config{Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets")), Registry: client})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Oracle == nil {
		t.Fatal("the core has no oracle commands: this test would prove nothing")
	}
	s := New(wired(Options{OwnerToken: testToken, Logger: discardLogger()}, c))
	if len(s.routeTable) < 40 {
		t.Fatalf("only %d routes registered: the server is not fully wired", len(s.routeTable))
	}
	for _, r := range s.routeTable {
		if strings.Contains(strings.ToLower(r), "oracle") {
			t.Errorf("route %s: the oracle has no HTTP endpoint", r)
		}
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	n := &testNode{t: t, log: c.Log, srv: s, url: hs.URL}
	for _, probe := range []struct{ method, path string }{
		{http.MethodGet, "/v1/oracle"}, {http.MethodGet, "/v1/oracle/feeds"}, {http.MethodPost, "/v1/oracle/publish"},
		{http.MethodPost, "/v1/oracle/feeds/wx.lisbon/pull"}, {http.MethodGet, "/v1/core/oracle/feeds"},
	} {
		n.request(probe.method, probe.path, testToken, strings.NewReader("{}")).wantError(t, http.StatusNotFound, codeNotFound, "")
	}
}
