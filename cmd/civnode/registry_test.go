package main

import (
	"crypto/ed25519"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
)

// TestServeProxiesRegistry: serve --registry-url wires the proxy to the
// registry with the node's own credential (<data-dir>/registry.credential and
// the node key's signature, checked by the fake) and pays from the data dir's
// payment accounts.
func TestServeProxiesRegistry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	key, err := datadir.LoadNodeKey(filepath.Join(dir, "node.key"), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	const credential = "reg-cred-serve-test-5c1f"
	if err := os.WriteFile(filepath.Join(dir, "registry.credential"), []byte(credential+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := servicenettest.New(t, servicenettest.Options{NodeKey: pub, NodeDID: eventlog.DIDKey(pub), Credential: credential})
	reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 2}, Async: &servicenettest.Async{}})
	_, addr := walletCLI(t, 0, "create", "main", "--max-per-payment", "10000", "--data-dir", dir)

	n := startNodeArgs(t, dir, "--registry-url", reg.URL+"/", "--log-level", "debug")
	body := `{"message":"hi","settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"main","network":"base-sepolia"}}}`
	req, err := http.NewRequest(http.MethodPost, n.url+"/v1/core/servicenet/agents/paid/invoke", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+n.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"accepted"`) {
		t.Fatalf("invoke: %d %s", resp.StatusCode, b)
	}
	if st := reg.Settlements(); len(st) != 1 || st[0].Payer != addr {
		t.Errorf("settlements = %+v, refusals %v", st, reg.Refusals())
	}
	n.stop(t)
	if strings.Contains(n.stderr.String(), credential) {
		t.Errorf("the node logged its registry credential")
	}
	if !strings.Contains(n.stderr.String(), reg.URL) {
		t.Errorf("the node did not log which registry it proxies:\n%s", n.stderr)
	}
}

// TestRegistryTimeoutsFitTheRoute: a registry that never answers a read must
// be a 504 registry_timeout, so serve's client gives up before the HTTP
// server's registry route does (http.registryHandlerTimeout, 60 s), retries
// and backoffs included.
func TestRegistryTimeoutsFitTheRoute(t *testing.T) {
	const routeTimeout = 60 * time.Second // http's registryHandlerTimeout
	attempts := time.Duration(1 + localnode.RegistryReadRetries)
	backoff := time.Duration(0)
	for i := range localnode.RegistryReadRetries {
		backoff += min(servicenet.DefaultBackoffBase<<i, servicenet.DefaultBackoffMax)
	}
	if worst := attempts*localnode.RegistryReadTimeout + backoff; worst >= routeTimeout {
		t.Errorf("a hung read takes up to %v, past the route's %v", worst, routeTimeout)
	}
}
