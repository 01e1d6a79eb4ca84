package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The recipe tests run docs/deploying.md's proxy configurations as written,
// with a real Caddy or nginx in front of a real node, and check what a
// deployment behind a proxy needs: each client's own address reaches the
// node's per-address rules, the stream and MCP work through the proxy, and
// another node's log is witnessed through it. The proxy listens on a
// loopback port as node.test and localhost; each client dials it from an
// address of its own in 127.0.0.0/8.

// recipeConnsPerAddr is the node's --max-conns-per-addr in the recipe tests:
// one client's streams meet it while another client's do not.
const recipeConnsPerAddr = 4

// proxyRecipe is one proxy of docs/deploying.md.
type proxyRecipe struct {
	// heading is the docs section whose first block is the proxy's
	// configuration and whose sh block is the node's serve command.
	heading string
	// fence is that block's info string.
	fence string
	// start runs the proxy with the section's configuration block, serving
	// https://node.test:port and https://localhost:port in front of
	// upstream (HOST:PORT), until the test ends, and returns the PEM file
	// of the CA its certificate chains to.
	start func(t *testing.T, block string, port int, upstream string) (caFile string)
}

// deployingRecipe is the configuration block and the serve arguments of a
// section of docs/deploying.md.
func deployingRecipe(t *testing.T, heading, fence string) (block string, serveArgs []string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/deploying.md has no %q section", heading)
	}
	if next := strings.Index(section, "\n#"); next >= 0 {
		section = section[:next]
	}
	blocks := regexp.MustCompile("(?s)```([a-z]+)\n(.*?)```").FindAllStringSubmatch(section, -1)
	for _, b := range blocks {
		switch {
		case b[1] == fence && block == "":
			block = b[2]
		case b[1] == "sh" && serveArgs == nil:
			serveArgs = strings.Fields(b[2])
		}
	}
	if block == "" || len(serveArgs) < 2 || serveArgs[0] != "civnode" || serveArgs[1] != "serve" {
		t.Fatalf("docs/deploying.md %q: want a %s block and a civnode serve command, got %q and %q", heading, fence, block, serveArgs)
	}
	return block, serveArgs[2:]
}

// freeLoopbackPort is a TCP port on 127.0.0.1 that was free a moment ago,
// for a proxy that must be named before it starts.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProxyProcess runs cmd in a process group of its own until the test
// ends, when the group gets SIGTERM and, after a grace, SIGKILL.
func startProxyProcess(t *testing.T, cmd *exec.Cmd, output io.Writer) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

// proxyClient is an HTTPS client of the proxy on port, which trusts pool,
// connects from the loopback address from, and reaches the proxy by any name
// (node.test resolves nowhere else). HTTP/2 unless websocket, which needs
// HTTP/1.1.
func proxyClient(t *testing.T, pool *x509.CertPool, port int, from string, websocket bool) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		},
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: !websocket,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitTimeout}
}

// proxied is one request through the proxy, with its answer.
func proxied(t *testing.T, c *http.Client, method, url, token, body string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s through the proxy: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// testProxyRecipe runs r's proxy in front of a node started with the
// recipe's serve command, and checks it as the recipes promise.
func testProxyRecipe(t *testing.T, r proxyRecipe) {
	needBinary(t)
	block, serveArgs := deployingRecipe(t, r.heading, r.fence)
	root := t.TempDir()

	// The log the node witnesses, and its verifier key.
	logNode := startNode(t, root+"/log")
	postOK(t, logNode.url, logNode.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	logKey := summaryOf(t, logNode.url, logNode.token).VerifierKey
	logNode.stop(t)

	port := freeLoopbackPort(t)
	public := fmt.Sprintf("https://node.test:%d", port)
	var args []string
	for i := 0; i < len(serveArgs); i++ {
		switch serveArgs[i] {
		case "--addr":
			args = append(args, "--addr", "127.0.0.1:0")
			i++
		case "--public-url":
			args = append(args, "--public-url", public)
			i++
		default:
			args = append(args, serveArgs[i])
		}
	}
	args = append(args, "--max-conns-per-addr", strconv.Itoa(recipeConnsPerAddr), "--witness-for", logKey)
	n := startServe(t, root+"/node", args...)
	upstream := strings.TrimPrefix(n.url, "http://")
	block = strings.ReplaceAll(block, "127.0.0.1:7777", upstream)
	caFile := r.start(t, block, port, upstream)
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	waitFor(t, "the proxy answers", func() (bool, string) {
		c := proxyClient(t, pool, port, "127.0.0.1", false)
		resp, err := c.Get(public + "/v1/health")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	t.Run("client address", func(t *testing.T) { checkProxiedClientAddress(t, n, pool, port, public) })
	t.Run("streams per client", func(t *testing.T) { checkProxiedStreamsPerClient(t, n, pool, port, public) })
	t.Run("mcp", func(t *testing.T) { checkProxiedMCP(t, n, pool, port, public) })
	t.Run("witness", func(t *testing.T) {
		w := verifierKeyOfWitness(t, n)
		log := startProcessEnv(t, root+"/log", []string{"SSL_CERT_FILE=" + caFile},
			"--witness", fmt.Sprintf("%s@https://localhost:%d/v1/witness", w, port))
		s := waitWitnessed(t, log.url, log.token)
		if len(s.Witnessed.Cosigners) != 1 {
			t.Errorf("witnessed through the proxy by %v, want the node behind it", s.Witnessed.Cosigners)
		}
	})
}

// checkProxiedClientAddress: a failed authentication through the proxy is
// audited with the client's own address, whatever X-Forwarded-For or
// Forwarded the client sends; the OpenAPI document names the public URL.
func checkProxiedClientAddress(t *testing.T, n *node, pool *x509.CertPool, port int, public string) {
	for _, from := range []string{"127.0.0.5", "127.0.0.6"} {
		c := proxyClient(t, pool, port, from, false)
		status, body := proxied(t, c, http.MethodGet, public+"/v1/state", "not-a-token", "",
			"X-Forwarded-For", "203.0.113.7", "Forwarded", "for=203.0.113.8")
		if status != http.StatusUnauthorized {
			t.Fatalf("a wrong token from %s: %d %s", from, status, body)
		}
		var audit struct {
			Entries []struct {
				Action string `json:"action"`
				Detail struct {
					Remote string `json:"remote"`
				} `json:"detail"`
			} `json:"entries"`
		}
		getJSON(t, n.url+"/v1/audit?action=auth.failed", n.token, http.StatusOK, &audit)
		last := audit.Entries[len(audit.Entries)-1]
		if last.Action != "auth.failed" || last.Detail.Remote != from {
			t.Errorf("the newest auth.failed through the proxy from %s names %+v", from, last)
		}
	}
	var doc struct {
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
	}
	c := proxyClient(t, pool, port, "127.0.0.5", false)
	status, body := proxied(t, c, http.MethodGet, public+"/v1/openapi.json", "", "")
	if err := json.Unmarshal(body, &doc); status != http.StatusOK || err != nil || len(doc.Servers) != 1 || doc.Servers[0].URL != public {
		t.Errorf("GET /v1/openapi.json through the proxy: %d, servers %+v (%v)", status, doc.Servers, err)
	}
}

// checkProxiedStreamsPerClient: one client's WebSocket streams through the
// proxy meet --max-conns-per-addr, the next is refused by the node, and
// another client still streams; an event written through the proxy reaches
// both clients' streams.
func checkProxiedStreamsPerClient(t *testing.T, n *node, pool *x509.CertPool, port int, public string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	wss := "wss" + strings.TrimPrefix(public, "https") + "/v1/stream?after_seq=0"
	dial := func(from string) (*websocket.Conn, *http.Response, error) {
		c := proxyClient(t, pool, port, from, true)
		ws, resp, err := websocket.Dial(ctx, wss, &websocket.DialOptions{
			HTTPClient: c, HTTPHeader: http.Header{"Authorization": {"Bearer " + n.token}}})
		if ws != nil {
			ws.SetReadLimit(-1)
			t.Cleanup(func() { ws.CloseNow() })
		}
		return ws, resp, err
	}
	var hostile []*websocket.Conn
	for i := range recipeConnsPerAddr {
		ws, _, err := dial("127.0.0.2")
		if err != nil {
			t.Fatalf("stream %d of one client: %v", i+1, err)
		}
		hostile = append(hostile, ws)
	}
	_, resp, err := dial("127.0.0.2")
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("stream %d of one client: status %d (%v), want the node's 503", recipeConnsPerAddr+1, status, err)
	}
	other, _, err := dial("127.0.0.3")
	if err != nil {
		t.Fatalf("another client's stream while the first is at its cap: %v", err)
	}

	c := proxyClient(t, pool, port, "127.0.0.4", false)
	publicID := "proxied-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	status, body := proxied(t, c, http.MethodPost, public+"/v1/civilization/bootstrap-identity", n.token,
		fmt.Sprintf(`{"display_name":"Proxied","public_id":%q,"faction":"order"}`, publicID))
	if status != http.StatusOK {
		t.Fatalf("a write through the proxy: %d %s", status, body)
	}
	for name, ws := range map[string]*websocket.Conn{"the other client's": other, "the first client's": hostile[0]} {
		for {
			_, msg, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("%s stream through the proxy: %v", name, err)
			}
			if strings.Contains(string(msg), publicID) {
				break
			}
		}
	}
}

// checkProxiedMCP: POST /mcp through the proxy, with the public URL as Host
// and Origin, answers; another Origin is refused.
func checkProxiedMCP(t *testing.T, n *node, pool *x509.CertPool, port int, public string) {
	c := proxyClient(t, pool, port, "127.0.0.7", false)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"proxied","version":"1"}}}`
	status, body := proxied(t, c, http.MethodPost, public+"/mcp", n.token, initialize,
		"Accept", "application/json, text/event-stream", "Origin", public)
	if status != http.StatusOK || !strings.Contains(string(body), `"protocolVersion":"2025-06-18"`) {
		t.Errorf("MCP initialize through the proxy: %d %s", status, body)
	}
	status, body = proxied(t, c, http.MethodPost, public+"/mcp", n.token,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Accept", "application/json, text/event-stream",
		"Origin", public, "MCP-Protocol-Version", "2025-06-18")
	if status != http.StatusOK || !strings.Contains(string(body), `"tools"`) {
		t.Errorf("MCP tools/list through the proxy: %d %s", status, body)
	}
	status, body = proxied(t, c, http.MethodPost, public+"/mcp", n.token, initialize,
		"Accept", "application/json, text/event-stream", "Origin", "https://evil.example")
	if status != http.StatusForbidden {
		t.Errorf("MCP with a foreign Origin through the proxy: %d %s, want 403", status, body)
	}
}
