package main

import (
	"bufio"
	"errors"
	"fmt"
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

// TestServeSilentConnsDoNotLockOut is the probe's repro of silent
// connections through the real binary: with --max-conns 50, 80 TCP
// connections that send nothing, two from each of 40 addresses, do not keep
// the owner out: GET /v1/state with the control token from 6 other addresses
// is answered 200 each time, also after the 80 are opened again (the flood
// renews them before the header time-out closes them). Each new connection
// takes the place of the one open longest without a whole request head.
func TestServeSilentConnsDoNotLockOut(t *testing.T) {
	p := startProcess(t, t.TempDir(), "--max-conns", "50")
	addr := strings.TrimPrefix(p.url, "http://")
	for round := range 2 {
		for i := range 80 {
			c := dialSilent(t, addr, fmt.Sprintf("127.0.0.%d", 2+i/2))
			defer c.Close()
		}
		for i := range 6 {
			from := fmt.Sprintf("127.0.0.%d", 50+i)
			if st := ownerGetFrom(t, p, from); st != http.StatusOK {
				t.Fatalf("round %d: the owner's GET /v1/state from %s with 80 silent connections open: %d, want 200", round+1, from, st)
			}
		}
	}
}

// TestServeSilentConnsPerAddress: a client with a token on an address whose
// --max-conns-per-addr is held by connections that send nothing is served;
// the oldest of them gives way.
func TestServeSilentConnsPerAddress(t *testing.T) {
	p := startProcess(t, t.TempDir(), "--max-conns-per-addr", "4")
	addr := strings.TrimPrefix(p.url, "http://")
	const from = "127.0.0.60"
	for range 6 {
		c := dialSilent(t, addr, from)
		defer c.Close()
	}
	if st := ownerGetFrom(t, p, from); st != http.StatusOK {
		t.Fatalf("the owner's GET /v1/state from %s with its cap full of silent connections: %d, want 200", from, st)
	}
}

// dialSilent opens a TCP connection to addr from the local IP from, and sends
// nothing on it.
func dialSilent(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: waitTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ownerGetFrom sends GET /v1/state with the control token on a new
// connection from the local IP from, closed after it, and returns the status.
func ownerGetFrom(t *testing.T, p *process, from string) int {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c := &http.Client{Timeout: waitTimeout, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext:       d.DialContext,
	}}
	req, err := http.NewRequest(http.MethodGet, p.url+"/v1/state", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/state from %s: %v", from, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
