package main

import (
	"crypto/ed25519"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
)

// The registry proxy through the real binary (civnode serve as a process) in
// front of the fake registry: who may read a task, and the bound on how long
// a payment stays valid.

// registryProcess prepares a data dir, starts a fake registry that checks the
// dir's node key, lets prepare set up the dir (payment accounts) and starts
// the binary on it with --registry-url.
func registryProcess(t *testing.T, prepare func(dir string)) (*process, *servicenettest.Registry, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	key, err := datadir.LoadNodeKey(filepath.Join(dir, "node.key"), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	reg := servicenettest.New(t, servicenettest.Options{NodeKey: pub, NodeDID: eventlog.DIDKey(pub)})
	if prepare != nil {
		prepare(dir)
	}
	return startProcess(t, dir, "--registry-url", reg.URL), reg, dir
}

// apiPost posts body to the node as token and returns the status and the
// decoded error code ("" for a success).
func apiPost(t *testing.T, p *process, token, path, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Code string `json:"code"`
	}
	if resp.StatusCode != http.StatusOK {
		json.Unmarshal(b, &e)
	}
	return resp.StatusCode, e.Code, b
}

// TestRegistryPaymentValidityBound: a 402 whose maxTimeoutSeconds is beyond
// servicenet.MaxValiditySeconds is 502 registry_bad_response and appends
// nothing, so it does not count against the account's day: an honest payment
// after two such challenges still fits a limit of one payment.
func TestRegistryPaymentValidityBound(t *testing.T) {
	p, reg, _ := registryProcess(t, func(dir string) {
		walletCLI(t, 0, "create", "main", "--max-per-day", "10000", "--data-dir", dir)
	})
	reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 2, Amount: "10000", MaxTimeoutSeconds: math.MaxInt64}})
	const body = `{"message":"hi","settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"main","network":"base-sepolia"}}}`
	payments := func() int {
		t.Helper()
		var page eventsBody
		getJSON(t, p.url+"/v1/events?type=payment.authorized", p.token, 200, &page)
		return len(page.Events)
	}
	for _, timeout := range []int64{math.MaxInt64, math.MaxInt64, 1_000_000_000_000} {
		reg.Update("paid", func(a *servicenettest.Agent) { a.Price.MaxTimeoutSeconds = timeout })
		status, code, b := apiPost(t, p, p.token, "/v1/core/servicenet/agents/paid/invoke", body)
		if status != http.StatusBadGateway || code != "registry_bad_response" || !strings.Contains(string(b), "maxTimeoutSeconds") {
			t.Errorf("maxTimeoutSeconds %d: %d %s, want 502 registry_bad_response naming maxTimeoutSeconds", timeout, status, b)
		}
		if n := payments(); n != 0 {
			t.Fatalf("maxTimeoutSeconds %d appended %d payment.authorized", timeout, n)
		}
	}
	if reg.PaidAttempts() != 0 {
		t.Errorf("a payment reached the registry %d times", reg.PaidAttempts())
	}

	reg.Update("paid", func(a *servicenettest.Agent) { a.Price.MaxTimeoutSeconds = 300 })
	start := time.Now().Unix()
	if status, code, b := apiPost(t, p, p.token, "/v1/core/servicenet/agents/paid/invoke", body); status != 200 {
		t.Fatalf("the honest payment after the refused challenges: %d %s %s", status, code, b)
	}
	var page eventsBody
	getJSON(t, p.url+"/v1/events?type=payment.authorized", p.token, 200, &page)
	if len(page.Events) != 1 {
		t.Fatalf("payment.authorized = %d, want 1", len(page.Events))
	}
	var pa struct {
		ValidBefore int64 `json:"valid_before"`
	}
	if err := json.Unmarshal(page.Events[0].Payload, &pa); err != nil {
		t.Fatal(err)
	}
	if d := pa.ValidBefore - start; d < 300 || d > 300+10 {
		t.Errorf("valid_before = start + %d, want start + 300", d)
	}
	if d := pa.ValidBefore - start; d > servicenet.MaxValiditySeconds {
		t.Errorf("valid for %d s, past the bound", d)
	}
	if st := reg.Settlements(); len(st) != 1 {
		t.Errorf("settlements = %d, want 1", len(st))
	}
}
