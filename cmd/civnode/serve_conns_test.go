package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeAnonymousConnsDoNotLockOut is the probe's repro through the real
// binary: with --max-conns 50, 50 kept-alive connections that each made one
// GET /v1/health and wait idle do not keep the owner out: GET /v1/state with
// the control token is answered 200 at once. The idle anonymous connections
// give way (the oldest first) and are closed by the node, by then or after
// their short idle time-out, without another request.
func TestServeAnonymousConnsDoNotLockOut(t *testing.T) {
	const maxConns = 50
	p := startProcess(t, t.TempDir(), "--max-conns", "50")
	addr := strings.TrimPrefix(p.url, "http://")
	var held []net.Conn
	for i := range maxConns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if st := rawGetStatus(t, conn, "/v1/health", ""); st != http.StatusOK {
			t.Fatalf("anonymous connection %d: GET /v1/health %d, want 200", i+1, st)
		}
		held = append(held, conn)
	}
	// A fresh connection each time, as a client arriving at a full node has.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: waitTimeout}
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, p.url+"/v1/state", nil)
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the owner's GET /v1/state with %d idle anonymous connections open: %d, want 200", maxConns, resp.StatusCode)
		}
	}
	for i, conn := range held {
		_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
		if n, err := bufio.NewReader(conn).Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("idle anonymous connection %d: read %d bytes, %v; want EOF (closed by the node)", i+1, n, err)
		}
	}
}
