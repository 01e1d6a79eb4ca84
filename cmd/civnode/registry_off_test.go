package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/doctor"
)

// A node without a registry (--registry-url ""): the proxy is off, the
// registry routes answer 503 registry_not_configured, MCP lists no servicenet
// tool, and doctor passes, saying so. And a node in front of civnode
// registry-dev, the stand-in registry for trying the proxy on one machine.

func TestDoctorWithoutRegistry(t *testing.T) {
	dir := stoppedNode(t)
	res := runCLI(t, nil, "doctor", "--data-dir", dir, "--addr", freeAddr(t), "--registry-url", "")
	if res.code != 0 || !strings.HasSuffix(res.stdout, "every check passed\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, ", registry none\n") {
		t.Errorf("the header does not say there is no registry:\n%s", res.stdout)
	}
	status, line, fix := reportLine(t, res.stdout, "registry")
	if status != "ok" || !strings.HasPrefix(line, "not configured") || fix != "" {
		t.Errorf("registry: %s %q (fix %q), want ok, not configured, no fix", status, line, fix)
	}

	res = runCLI(t, nil, "doctor", "--data-dir", dir, "--addr", freeAddr(t), "--registry-url", "", "--json")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.code != 0 {
		t.Fatalf("exit %d, %v:\n%s", res.code, err, res.stdout)
	}
	if rep.Status != "ok" || rep.Warnings != 0 || rep.RegistryURL != "" {
		t.Errorf("report status %q, %d warnings, registry_url %q; want ok, 0, \"\"", rep.Status, rep.Warnings, rep.RegistryURL)
	}
}

// TestServeWithoutRegistryBinary runs the binary with --registry-url "" and
// asks it as a client would.
func TestServeWithoutRegistryBinary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	p := startProcess(t, dir, "--registry-url", "")

	for _, path := range []string{"/v1/core/servicenet/agents", "/v1/core/servicenet/agents/summarizer"} {
		var e struct{ Error, Code string }
		getJSON(t, p.url+path, p.token, http.StatusServiceUnavailable, &e)
		if e.Code != "registry_not_configured" || !strings.Contains(e.Error, `--registry-url ""`) {
			t.Errorf("GET %s: %+v, want registry_not_configured naming --registry-url \"\"", path, e)
		}
	}
	status, code, _ := apiPost(t, p, p.token, "/v1/core/servicenet/agents/summarizer/invoke", `{"message":"hi"}`)
	if status != http.StatusServiceUnavailable || code != "registry_not_configured" {
		t.Errorf("invoke: %d %s, want 503 registry_not_configured", status, code)
	}

	list := mcpPost(t, p, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if !strings.Contains(list, `"query_events"`) || strings.Contains(list, "servicenet") {
		t.Errorf("tools/list: want the tools without the servicenet ones:\n%s", list)
	}
	call := mcpPost(t, p, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"invoke_servicenet_agent_async","arguments":{"agent_id":"summarizer","message":"hi"}}}`)
	if !strings.Contains(call, `"isError":true`) || !strings.Contains(call, `registry_not_configured`) {
		t.Errorf("tools/call of a servicenet tool:\n%s", call)
	}

	out, exit := runBinary(t, "doctor", "--data-dir", dir, "--addr", strings.TrimPrefix(p.url, "http://"), "--registry-url", "")
	if exit != 0 || !strings.Contains(out, "registry") || !strings.Contains(out, "not configured") {
		t.Errorf("doctor on the running node: exit %d\n%s", exit, out)
	}
	if strings.Contains(p.stderr.String(), "BaseURL") {
		t.Errorf("the node complained about the registry URL:\n%s", p.stderr)
	}
}

// mcpPost sends one JSON-RPC message to POST /mcp as the owner and returns
// the answer.
func mcpPost(t *testing.T, p *process, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /mcp: %d %v\n%s", resp.StatusCode, err, b)
	}
	return string(b)
}

// TestRegistryDevBinary follows docs/servicenet.md on one machine: civnode
// registry-dev, and a node in front of it, both the real binary.
func TestRegistryDevBinary(t *testing.T) {
	needBinary(t)
	reg := exec.Command(civnodeBin, "registry-dev", "--addr", "127.0.0.1:0")
	stdout, err := reg.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		reg.Process.Kill()
		reg.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "civnode registry-dev listening on ")
	if err != nil || !ok {
		t.Fatalf("first line %q, %v", line, err)
	}

	dir := filepath.Join(t.TempDir(), "node")
	p := startProcess(t, dir, "--registry-url", base)
	status, _, b := apiPost(t, p, p.token, "/v1/core/servicenet/agents/summarizer/invoke",
		`{"message":"Summarise.","input":{"text":"One. Two.","sentences":1}}`)
	if status != http.StatusOK || !strings.Contains(string(b), `"summary":"One."`) {
		t.Errorf("summarizer through the node: %d %s", status, b)
	}
	status, _, b = apiPost(t, p, p.token, "/v1/core/servicenet/agents/calendar/invoke", `{"message":"Book a slot."}`)
	if status != http.StatusOK || !strings.Contains(string(b), `"authorizationUrl":"`+base+`/oauth/authorize"`) {
		t.Errorf("the OAuth consent through the node: %d %s", status, b)
	}
	walletCLI(t, 0, "create", "ops", "--max-per-payment", "10000", "--addr", strings.TrimPrefix(p.url, "http://"), "--data-dir", dir)
	status, _, b = apiPost(t, p, p.token, "/v1/core/servicenet/agents/market-data/invoke",
		`{"message":"Quote.","settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"ops","network":"eip155:84532"}}}`)
	if status != http.StatusOK || !strings.Contains(string(b), `"price":"3120.55"`) {
		t.Errorf("a paid invoke through the node: %d %s", status, b)
	}
	var page eventsBody
	getJSON(t, p.url+"/v1/events?type=payment.settled", p.token, http.StatusOK, &page)
	if len(page.Events) != 1 {
		t.Errorf("%d payment.settled events, want 1", len(page.Events))
	}
}
