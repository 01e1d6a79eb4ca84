package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeLimitFlags: --rate-limit, --rate-burst, --max-conns and
// --max-conns-per-addr reach the server (docs/limits.md), and values that
// mean nothing are usage errors.
func TestServeLimitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--rate-limit", "-1"}, {"--rate-limit", "NaN"}, {"--rate-burst", "-1"}, {"--max-conns", "-1"},
		{"--response-budget", "-1"}, {"--response-budget", "1000"},
		{"--max-conns-per-addr", "-1"},
	} {
		res := runCLI(t, nil, append([]string{"serve", "--data-dir", t.TempDir() + "/x"}, args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, args[0]) {
			t.Errorf("serve %v: code %d, stderr %q; want a usage error naming the flag", args, res.code, res.stderr)
		}
	}
	for _, tc := range []struct {
		cfg               serveConfig
		rate              float64
		maxConns, perAddr int
	}{
		{serveConfig{rateLimit: 0, maxConns: 0}, -1, -1, -1},
		{serveConfig{rateLimit: 2.5, maxConns: 10, maxConnsPerAddr: 3}, 2.5, 10, 3},
	} {
		if got := tc.cfg.httpRateLimit(); got != tc.rate {
			t.Errorf("httpRateLimit of %v = %v, want %v", tc.cfg.rateLimit, got, tc.rate)
		}
		if got := tc.cfg.httpMaxConns(); got != tc.maxConns {
			t.Errorf("httpMaxConns of %v = %v, want %v", tc.cfg.maxConns, got, tc.maxConns)
		}
		if got := tc.cfg.httpMaxConnsPerAddr(); got != tc.perAddr {
			t.Errorf("httpMaxConnsPerAddr of %v = %v, want %v", tc.cfg.maxConnsPerAddr, got, tc.perAddr)
		}
	}

	n := startNodeArgs(t, t.TempDir(), "--rate-limit", "0.01", "--rate-burst", "1", "--max-conns", "4", "--max-conns-per-addr", "2")
	// One connection per request, so that no idle connection holds a slot.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	get := func(path string) (*http.Response, map[string]string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, n.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+n.token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]string
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &body)
		return resp, body
	}
	if resp, _ := get("/v1/events?limit=1"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first GET /v1/events: %d", resp.StatusCode)
	}
	resp, body := get("/v1/events?limit=1")
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || body["code"] != "rate_limited" || err != nil || secs < 1 {
		t.Errorf("over --rate-limit: %d %v, Retry-After %q; want 429 rate_limited, whole seconds ≥ 1",
			resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if resp, _ := get("/v1/state"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/state is not rate-limited, got %d", resp.StatusCode)
	}

	// Kept-alive connections that authenticated (so that none gives way to
	// a new one): two from 127.0.0.1 fill its --max-conns-per-addr, and a
	// third from it is answered 503 at once; two more from 127.0.0.2 fill
	// --max-conns, and one from 127.0.0.3 is answered 503 at once. The
	// requests above closed their connections, but the node may not have let
	// go of their slots yet: a filling connection answered 503 is tried again
	// until they are free.
	addr := strings.TrimPrefix(n.url, "http://")
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	for _, from := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"} {
		deadline := time.Now().Add(waitTimeout)
		for {
			conn := dial(from)
			st := rawGetStatus(t, conn, "/v1/state", n.token)
			if st == http.StatusOK {
				defer conn.Close()
				break
			}
			conn.Close()
			if st != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("within the caps, from %s: %d", from, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, tc := range []struct{ from, over string }{
		{"127.0.0.1", "--max-conns-per-addr"}, {"127.0.0.3", "--max-conns"},
	} {
		conn := dial(tc.from)
		defer conn.Close()
		if st := rawGetStatus(t, conn, "/v1/state", n.token); st != http.StatusServiceUnavailable {
			t.Errorf("over %s, from %s: %d, want 503", tc.over, tc.from, st)
		}
	}
}

// rawGetStatus sends GET path on conn, with token unless it is "", keeping
// the connection alive, and returns the status.
func rawGetStatus(t *testing.T, conn net.Conn, path, token string) int {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(waitTimeout))
	head := "GET " + path + " HTTP/1.1\r\nHost: civnode\r\n"
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
