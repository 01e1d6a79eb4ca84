package http

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/witness"
)

func TestClientAddrHeaders(t *testing.T) {
	trust := newProxyTrust([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::ffff:192.0.2.1/128")})
	cases := []struct {
		name, remote, forwarded, xff, want string
	}{
		{"untrusted peer: X-Forwarded-For ignored", "198.51.100.9:4000", "", "203.0.113.7", "198.51.100.9:4000"},
		{"untrusted peer: Forwarded ignored", "198.51.100.9:4000", "for=203.0.113.7", "", "198.51.100.9:4000"},
		{"trusted peer without headers", "10.1.2.3:4000", "", "", "10.1.2.3:4000"},
		{"trusted peer: X-Forwarded-For", "10.1.2.3:4000", "", "203.0.113.7", "203.0.113.7"},
		{"a mapped prefix trusts its IPv4 peer", "192.0.2.1:4000", "", "203.0.113.7", "203.0.113.7"},
		{"right-most hop, not the client's own claim", "10.1.2.3:4000", "", "1.2.3.4, 203.0.113.7", "203.0.113.7"},
		{"trusted hops are skipped", "10.1.2.3:4000", "", "1.2.3.4, 203.0.113.7, 10.9.9.9", "203.0.113.7"},
		{"two header lines are one list", "10.1.2.3:4000", "", "1.2.3.4\n203.0.113.8", "203.0.113.8"},
		{"every hop trusted: the left-most", "10.1.2.3:4000", "", "10.5.5.5, 10.9.9.9", "10.5.5.5"},
		{"a hop that is no address leaves the proxy", "10.1.2.3:4000", "", "203.0.113.7, garbage", "10.1.2.3:4000"},
		{"Forwarded first", "10.1.2.3:4000", "for=203.0.113.9;proto=https", "203.0.113.7", "203.0.113.9"},
		{"Forwarded quoted IPv6 with port", "10.1.2.3:4000", `for="[2001:db8::1]:4711"`, "", "2001:db8::1"},
		{"Forwarded elements, right-most untrusted", "10.1.2.3:4000", `for=1.2.3.4, for=203.0.113.9;by="a,b", for=10.0.0.2`, "", "203.0.113.9"},
		{"Forwarded IPv4 with port", "10.1.2.3:4000", `for="203.0.113.9:80"`, "", "203.0.113.9"},
		{"Forwarded unknown", "10.1.2.3:4000", "for=unknown", "", "10.1.2.3:4000"},
		{"Forwarded without for: X-Forwarded-For", "10.1.2.3:4000", "proto=https", "203.0.113.7", "203.0.113.7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = c.remote
			if c.forwarded != "" {
				r.Header.Set("Forwarded", c.forwarded)
			}
			for line := range strings.SplitSeq(c.xff, "\n") {
				if line != "" {
					r.Header.Add("X-Forwarded-For", line)
				}
			}
			if got := trust.clientAddr(r); got != c.want {
				t.Errorf("clientAddr = %q, want %q", got, c.want)
			}
		})
	}
	// With no trusted proxy the headers are never read.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.1.2.3:4000"
	r.Header.Set("X-Forwarded-For", "203.0.113.7")
	if got := newProxyTrust(nil).clientAddr(r); got != r.RemoteAddr {
		t.Errorf("no trusted proxies: %q", got)
	}
}

// proxiedNode is a node behind a tiny reverse proxy on loopback. The proxy
// passes on the Forwarded and X-Forwarded-For its clients send, as a chain
// of proxies would, so that a test can speak for many client addresses.
type proxiedNode struct {
	*testNode
	proxyURL string
}

func newProxiedNode(t *testing.T, trusted string, editOpts func(*Options), editServer func(*Server)) *proxiedNode {
	t.Helper()
	n := newTestNodeWith(t, func(o *Options) {
		o.TrustedProxies = []netip.Prefix{mustPrefix(t, trusted)}
		if editOpts != nil {
			editOpts(o)
		}
	}, editServer)
	target, err := url.Parse(n.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		for _, h := range []string{"Forwarded", "X-Forwarded-For"} {
			if v := pr.In.Header.Values(h); len(v) > 0 {
				pr.Out.Header[h] = v
			}
		}
	}})
	t.Cleanup(proxy.Close)
	return &proxiedNode{testNode: n, proxyURL: proxy.URL}
}

// via sends a request through the proxy.
func (p *proxiedNode) via(method, path, token, body string, headers ...string) response {
	p.t.Helper()
	direct := p.url
	p.url = p.proxyURL
	defer func() { p.url = direct }()
	return p.request(method, path, token, strings.NewReader(body), headers...)
}

func TestTrustedProxyFailedAuthPerClient(t *testing.T) {
	var logs logBuffer
	clock := newTestClock()
	p := newProxiedNode(t, "127.0.0.1/32", func(o *Options) { o.Logger = debugLogger(&logs) },
		func(s *Server) { s.authFails.now = clock.now })
	hostile := []string{"X-Forwarded-For", "203.0.113.7"}
	for i := range authFailBurst {
		if r := p.via(http.MethodGet, "/v1/state", "wrong", "", hostile...); r.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, r.status)
		}
	}
	p.via(http.MethodGet, "/v1/state", testToken, "", hostile...).wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	// Another client behind the same proxy is not refused for it.
	if r := p.via(http.MethodGet, "/v1/state", testToken, "", "Forwarded", "for=203.0.113.8"); r.status != http.StatusOK {
		t.Errorf("another client through the proxy: %d %s", r.status, r.body)
	}
	// The audit entry and the request log name the client, not the proxy.
	entries := p.auditEntries("auth.failed")
	if len(entries) == 0 {
		t.Fatal("no auth.failed entry")
	}
	var d map[string]string
	if err := json.Unmarshal(entries[0].Detail, &d); err != nil {
		t.Fatal(err)
	}
	if d["remote"] != "203.0.113.7" {
		t.Errorf("auth.failed remote = %q, want the client's address", d["remote"])
	}
	if !strings.Contains(logs.String(), `"remote":"203.0.113.8"`) {
		t.Errorf("the request log does not name the client 203.0.113.8:\n%.2000s", logs.String())
	}
}

func TestUntrustedPeerSpoofIgnored(t *testing.T) {
	clock := newTestClock()
	// Loopback is not trusted: the proxy's headers are a client's words.
	p := newProxiedNode(t, "192.0.2.1/32", nil, func(s *Server) { s.authFails.now = clock.now })
	for i := range authFailBurst {
		spoof := []string{"X-Forwarded-For", "203.0.113." + string(rune('0'+i%10))}
		if r := p.via(http.MethodGet, "/v1/state", "wrong", "", spoof...); r.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, r.status)
		}
	}
	// Each failure claimed another address; all were the peer's.
	p.via(http.MethodGet, "/v1/state", testToken, "", "Forwarded", "for=198.51.100.1").wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	entries := p.auditEntries("auth.failed")
	if len(entries) == 0 {
		t.Fatal("no auth.failed entry")
	}
	var d map[string]string
	if err := json.Unmarshal(entries[0].Detail, &d); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d["remote"], "127.0.0.1:") {
		t.Errorf("auth.failed remote = %q, want the peer's address", d["remote"])
	}
}

func TestTrustedProxyWitnessLimitPerClient(t *testing.T) {
	clock := newTestClock()
	key := ed25519.NewKeyFromSeed(testSeed)
	wkey, err := witness.DeriveKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxiedNode(t, "127.0.0.1", func(o *Options) {
		wit, err := witness.New(witness.Options{Key: wkey, Name: "witness.test/w", Logs: []string{o.Log.VerifierKey()},
			StatePath: filepath.Join(t.TempDir(), "witness.json")})
		if err != nil {
			t.Fatal(err)
		}
		o.Witness = wit
	}, func(s *Server) { s.witnessLimits.now = clock.now })
	const path = "/v1/witness/add-checkpoint"
	for i := range witnessBurst {
		if r := p.via(http.MethodPost, path, "", "not a request", "X-Forwarded-For", "203.0.113.7"); r.status != http.StatusBadRequest {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.body)
		}
	}
	if r := p.via(http.MethodPost, path, "", "not a request", "X-Forwarded-For", "203.0.113.7"); r.status != http.StatusTooManyRequests {
		t.Errorf("over the limit: %d, want 429", r.status)
	}
	if r := p.via(http.MethodPost, path, "", "not a request", "X-Forwarded-For", "203.0.113.8"); r.status != http.StatusBadRequest {
		t.Errorf("another client: %d, want 400 (not limited)", r.status)
	}
}

// mustPrefix parses a CIDR or a bare IP (one address).
func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	if p, err := netip.ParsePrefix(s); err == nil {
		return p
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// proxiedConn opens a connection from the trusted loopback proxy address,
// sends GET /v1/state with the owner token for client on it and returns
// the answer's status, keeping the connection open (idle) if it was 200.
func proxiedConn(t *testing.T, addr, client string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitDeadline))
	if _, err := io.WriteString(c, "GET /v1/state HTTP/1.1\r\nHost: civnode\r\nAuthorization: Bearer "+testToken+
		"\r\nX-Forwarded-For: "+client+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Code string }
		if err := json.Unmarshal(body, &e); err != nil || e.Code != "too_many_connections" || !resp.Close {
			t.Errorf("a refused client's answer: %d %s (Connection: close %v)", resp.StatusCode, body, resp.Close)
		}
	}
	return resp.StatusCode
}

// TestTrustedProxyConnCapPerClient: the connections of a trusted proxy count
// against the clients whose requests they carry, so one client behind the
// proxy meets the per-address cap and another still gets in.
func TestTrustedProxyConnCapPerClient(t *testing.T) {
	const perAddr = 64
	n := newTestNodeWith(t, func(o *Options) {
		o.MaxConns, o.MaxConnsPerAddr = 1000, perAddr
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}, nil)
	addr := serveOn(t, n.srv)
	for i := range perAddr {
		if got := proxiedConn(t, addr, "203.0.113.7"); got != http.StatusOK {
			t.Fatalf("connection %d of the client: %d", i+1, got)
		}
	}
	if got := proxiedConn(t, addr, "203.0.113.7"); got != http.StatusServiceUnavailable {
		t.Errorf("connection %d of the client: %d, want 503", perAddr+1, got)
	}
	if got := proxiedConn(t, addr, "203.0.113.8"); got != http.StatusOK {
		t.Errorf("another client behind the proxy: %d", got)
	}
	// The proxy's own address holds perAddr+1 connections, and is no client.
	if got := proxiedConn(t, addr, "127.0.0.1"); got != http.StatusOK {
		t.Errorf("the proxy as its own client: %d", got)
	}

	// Through a reverse proxy: the client at its cap is refused, another not.
	target, err := url.Parse("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Header["X-Forwarded-For"] = pr.In.Header.Values("X-Forwarded-For")
	}})
	t.Cleanup(proxy.Close)
	p := &testNode{t: t, url: proxy.URL}
	if r := p.request(http.MethodGet, "/v1/state", testToken, nil, "X-Forwarded-For", "203.0.113.7"); r.status != http.StatusServiceUnavailable {
		t.Errorf("the client at its cap through the proxy: %d", r.status)
	}
	if r := p.request(http.MethodGet, "/v1/state", testToken, nil, "X-Forwarded-For", "203.0.113.9"); r.status != http.StatusOK {
		t.Errorf("another client through the proxy: %d %s", r.status, r.body)
	}
}

// TestUntrustedPeerConnCapIsItsOwn: a peer that is not a trusted proxy is
// counted against its own address, whatever X-Forwarded-For says.
func TestUntrustedPeerConnCapIsItsOwn(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) {
		o.MaxConns, o.MaxConnsPerAddr = 100, 2
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}
	}, nil)
	addr := serveOn(t, n.srv)
	proxiedConn(t, addr, "203.0.113.7")
	proxiedConn(t, addr, "203.0.113.8")
	wantRefusedConn(t, dialFrom(t, addr, "127.0.0.1"))
}
