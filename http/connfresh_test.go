package http

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// silentNode serves a test node whose cap is maxConns and whose per-address
// cap is perAddr (negative: none), with a header time-out long enough that no
// silent connection is closed by it during the test, and returns its address.
func silentNode(t *testing.T, maxConns, perAddr int) (*testNode, string) {
	t.Helper()
	n := newTestNodeWith(t, func(o *Options) { o.MaxConns = maxConns; o.MaxConnsPerAddr = perAddr },
		func(s *Server) { s.headerTimeout = waitDeadline })
	return n, serveOn(t, n.srv)
}

// TestConnCapFullOfSilent: with the cap filled by connections that have not
// sent a whole request head (the first part of one, the others nothing),
// clients with a token are served at once, each new connection taking the
// place of the oldest of them; and the reserve still holds: an anonymous
// request on a connection let in that way is answered the cap's 503.
func TestConnCapFullOfSilent(t *testing.T) {
	const maxConns = 10
	_, addr := silentNode(t, maxConns, -1)
	var held []heldConn
	for i := range maxConns {
		c := dialConn(t, "tcp", addr)
		if i == 0 {
			if _, err := io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHo"); err != nil {
				t.Fatal(err)
			}
		}
		held = append(held, heldConn{Conn: c, br: bufio.NewReader(c)})
	}
	// Kept alive and authenticated, each holds its slot, so that each next
	// connection finds the cap full again.
	for range 3 {
		holdConn(t, addr, "", "/v1/state", testToken)
	}
	for i := range 3 {
		held[i].wantClosedByNode(t, "fresh connection "+strconv.Itoa(i+1)+", the oldest, making room")
	}
	wantRefusedConn(t, dialConn(t, "tcp", addr))
	held[3].wantClosedByNode(t, "fresh connection 4, making room for the anonymous one")
}

// TestConnCapPerAddressFullOfSilent: a client with a token on an address
// whose cap is held by connections that have sent nothing is served at once;
// the oldest of them gives way.
func TestConnCapPerAddressFullOfSilent(t *testing.T) {
	_, addr := silentNode(t, 100, 3)
	var held []heldConn
	for range 3 {
		c := dialFrom(t, addr, "127.0.0.3")
		held = append(held, heldConn{Conn: c, br: bufio.NewReader(c)})
	}
	holdConn(t, addr, "127.0.0.3", "/v1/state", testToken)
	held[0].wantClosedByNode(t, "the address's oldest silent connection, making room")
}

// TestConnEvictionSparesReadHead: a connection whose request head has been
// read is never closed to make room, though its body is still arriving; the
// fresh ones after it give way in turn, the oldest first.
func TestConnEvictionSparesReadHead(t *testing.T) {
	ln := listen(t)
	l := limitConns(ln, 3)
	entered := make(chan struct{}, 1)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			_, _ = io.WriteString(w, strconv.Itoa(len(b)))
		}),
		ConnState:   l.connState,
		ConnContext: l.connContext,
	}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Shutdown(context.Background()); _ = hs.Close() })
	at := ln.Addr().String()

	slow := dialConn(t, "tcp", at)
	if _, err := io.WriteString(slow, "POST / HTTP/1.1\r\nHost: civnode\r\nContent-Length: 10\r\n\r\nabc"); err != nil {
		t.Fatal(err)
	}
	<-entered
	partial := dialConn(t, "tcp", at)
	if _, err := io.WriteString(partial, "POST / HTTP/1.1\r\nContent-Le"); err != nil {
		t.Fatal(err)
	}
	silent := dialConn(t, "tcp", at)
	var fresh []net.Conn
	for range 3 {
		fresh = append(fresh, dialConn(t, "tcp", at))
	}
	for what, c := range map[string]net.Conn{"the partial head": partial, "the silent one": silent, "the first new one": fresh[0]} {
		heldConn{Conn: c, br: bufio.NewReader(c)}.wantClosedByNode(t, what)
	}
	if _, err := io.WriteString(slow, "defghij"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("the request whose body was arriving: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "10" {
		t.Errorf("the request whose body was arriving: %d %q, want 200 \"10\"", resp.StatusCode, body)
	}
}

// TestHeadScan: the end of a request head is found whichever reads it is
// split across, with CRLF or bare LF line ends, and not before.
func TestHeadScan(t *testing.T) {
	for _, head := range []string{
		"GET /v1/state HTTP/1.1\r\nHost: civnode\r\nAuthorization: Bearer x\r\n\r\n",
		"GET /v1/state HTTP/1.1\nHost: civnode\n\n",
		"GET / HTTP/1.1\r\n\r\n",
	} {
		for a := 0; a < len(head); a++ {
			for b := a; b < len(head); b++ {
				var h headScan
				got := -1
				for i, part := range []string{head[:a], head[a:b], head[b:]} {
					if part != "" && h.ends([]byte(part)) {
						got = i
						break
					}
				}
				if got != 2 {
					t.Fatalf("%q split at %d, %d: end found in part %d, want 2", head, a, b, got)
				}
			}
		}
	}
}
