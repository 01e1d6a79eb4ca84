package http

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serveOn runs s.Serve on a loopback listener until the test ends and returns
// the listener's address.
func serveOn(t *testing.T, s *Server) string {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// dialConn opens a raw connection to addr, closed when the test ends.
func dialConn(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitDeadline))
	return c
}

// rawGet sends GET path on c, keeping the connection alive, and reads the answer.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) (*http.Response, []byte) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: civnode\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// wantRefusedConn checks the answer to a connection over the cap, and that the
// connection is closed after it.
func wantRefusedConn(t *testing.T, c net.Conn) {
	t.Helper()
	br := bufio.NewReader(c)
	resp, body := rawGet(t, c, br, "/v1/health")
	r := response{status: resp.StatusCode, header: resp.Header, body: body}
	r.wantError(t, http.StatusServiceUnavailable, "too_many_connections", "")
	wantDefaultHeaders(t, "the connection cap's 503", resp.Header)
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	if !resp.Close {
		t.Error("the answer does not say Connection: close")
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("after the answer: read %d bytes, %v; want EOF", n, err)
	}
}

// oneShotGet sends GET path on a new connection that is closed after it, so
// that it holds no slot afterwards, and returns the status (0 on an error).
func oneShotGet(addr, path string) int {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: waitDeadline}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConnCap: with the cap reached, a new connection is answered 503
// too_many_connections with Retry-After: 1 at once and closed, over a raw
// connection and through an ordinary client; once a connection closes, its
// slot serves again. The connections that fill the cap authenticated, so
// none of them is closed to make room (TestConnCapFullOfIdleAnonymous).
func TestConnCap(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.MaxConns = 2 }, nil)
	addr := serveOn(t, n.srv)
	var held []net.Conn
	for range 2 {
		held = append(held, holdConn(t, addr, "", "/v1/state", testToken)) // kept alive, idle: each holds its slot
	}
	wantRefusedConn(t, dialConn(t, "tcp", addr))
	if got := oneShotGetToken(addr, "/v1/state", testToken); got != http.StatusServiceUnavailable {
		t.Errorf("net/http client over the cap: status %d, want 503", got)
	}
	held[0].Close()
	waitFor(t, "a slot to serve again", func() bool { return oneShotGetToken(addr, "/v1/state", testToken) == http.StatusOK })
}

// TestConnCapCountsStreams: a WebSocket stream holds its connection's slot
// for as long as it is open.
func TestConnCapCountsStreams(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{serve: true, editServer: func(s *Server) { s.maxConns = 1 }})
	addr := n.url[len("http://"):]
	c := n.dialOwner(t, "")
	wantRefusedConn(t, dialConn(t, "tcp", addr))
	c.CloseNow()
	waitFor(t, "the stream's slot to serve again", func() bool { return oneShotGet(addr, "/v1/health") == http.StatusOK })
}

// TestConnCapUnixApart: connections on a unix socket (the control socket) are
// counted apart from TCP ones, so a TCP flood leaves the CLI its own slots.
func TestConnCapUnixApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.sock")
	uln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l := limitConns(uln, 1)
	defer l.Close()
	refused := make(chan struct{}, 4)
	l.refused = func() { refused <- struct{}{} }
	l.tcp.open.Store(1) // TCP is full
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	first := dialConn(t, "unix", path)
	c := <-accepted
	if l.unix.open.Load() != 1 || l.tcp.open.Load() != 1 {
		t.Fatalf("open: unix %d, tcp %d; want 1, 1", l.unix.open.Load(), l.tcp.open.Load())
	}
	rc := dialConn(t, "unix", path)
	wantRefusedConn(t, rc)
	rc.Close()
	<-refused
	c.Close()
	c.Close() // a second close gives nothing back twice
	if got := l.unix.open.Load(); got != 0 {
		t.Fatalf("after close: %d open, want 0", got)
	}
	dialConn(t, "unix", path)
	if c := <-accepted; c == nil {
		t.Fatal("no connection after a slot freed")
	} else {
		c.Close()
	}
	first.Close()
}

// TestConnCapRefusalsAreBounded: past maxRefusing refusals in progress, a
// connection over the cap is closed at once without an answer, so a flood
// cannot pile up goroutines.
func TestConnCapRefusalsAreBounded(t *testing.T) {
	ln := listen(t)
	l := limitConns(ln, 1)
	defer l.Close()
	var mu sync.Mutex
	refusedCount := 0
	l.refused = func() { mu.Lock(); refusedCount++; mu.Unlock() }
	for range maxRefusing {
		l.refusing <- struct{}{} // every refusal slot busy
	}
	l.tcp.open.Store(1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := dialConn(t, "tcp", ln.Addr().String())
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("read %d bytes, %v; want the connection closed without an answer", n, err)
	}
	waitFor(t, "the refusal to be counted", func() bool { mu.Lock(); defer mu.Unlock(); return refusedCount == 1 })
}

// TestStreamsPerToken: a token with as many streams open as it may is
// refused another, 429 too_many_streams, before the upgrade; other tokens are
// not affected, and a closed stream frees its place.
func TestStreamsPerToken(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{editServer: func(s *Server) { s.streams.perToken = 2 }})
	if DefaultStreamsPerToken < 100 {
		t.Errorf("DefaultStreamsPerToken = %d: civnode bench opens 100 streams with one token", DefaultStreamsPerToken)
	}
	a := n.dialOwner(t, "")
	n.dialOwner(t, "")
	r := n.dialRefused(t, "", bearer(testToken))
	r.wantError(t, http.StatusTooManyRequests, "too_many_streams", "")
	wantRetryAfter(t, r, 1)
	obs := issue(t, n.tokens, "observer", "")
	if _, resp, err := n.dial(t, "", bearer(obs.Secret), nil); err != nil {
		t.Fatalf("another token: %v (%s)", err, respBody(resp))
	}
	a.CloseNow()
	waitFor(t, "the closed stream's place", func() bool {
		c, _, err := n.dial(t, "", bearer(testToken), nil)
		if err == nil {
			c.CloseNow()
		}
		return err == nil
	})
}

// rawGetToken is rawGet with the request's bearer token.
func rawGetToken(t *testing.T, c net.Conn, br *bufio.Reader, path, token string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: civnode\r\nAuthorization: Bearer "+token+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// heldConn is a kept-alive connection a test holds open after a request.
type heldConn struct {
	net.Conn
	br *bufio.Reader
}

// holdConn opens a connection from the local address from (IP only; "" for
// any), sends GET path on it, with token if it is not "", requires 200, and
// keeps the connection alive and idle.
func holdConn(t *testing.T, addr, from, path, token string) heldConn {
	t.Helper()
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitDeadline))
	h := heldConn{Conn: c, br: bufio.NewReader(c)}
	var resp *http.Response
	if token == "" {
		resp, _ = rawGet(t, c, h.br, path)
	} else {
		resp = rawGetToken(t, c, h.br, path, token)
	}
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET %s from %s: %d, close %v; want 200 kept alive", path, from, resp.StatusCode, resp.Close)
	}
	return h
}

// waitIdleAnonymous waits until s has noted n connections that never
// authenticated as idle. net/http marks a connection idle after it has
// written the response, so a client can read the answer before the node
// knows the connection is idle and may be closed to make room.
func waitIdleAnonymous(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for {
		if l := s.conns.Load(); l != nil && l.idleAnonymous() >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node did not note %d idle anonymous connections within %v", n, waitDeadline)
		}
		time.Sleep(time.Millisecond)
	}
}

// wantClosedByNode requires the node to close h without another word. The
// close reads as EOF, or as a reset when bytes the client sent were still
// unread in the node's socket (the kernel then answers the close with RST):
// which one depends on whether the server had read them yet, not on the node.
func (h heldConn) wantClosedByNode(t *testing.T, what string) {
	t.Helper()
	if n, err := h.br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("%s: read %d bytes, %v; want EOF or a reset (closed by the node)", what, n, err)
	}
}

// oneShotGetToken is oneShotGet with a bearer token.
func oneShotGetToken(addr, path, token string) int {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: waitDeadline}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConnCapPerAddress: one address (IPv4 here; IPv6 counts its /64) may
// hold at most MaxConnsPerAddr connections: one more from it is answered the
// cap's 503, while another address is served. Before refusing, the address's
// own idle connection that never authenticated is closed to make room.
func TestConnCapPerAddress(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.MaxConns = 100; o.MaxConnsPerAddr = 2 }, nil)
	addr := serveOn(t, n.srv)
	holdConn(t, addr, "127.0.0.1", "/v1/state", testToken)
	holdConn(t, addr, "127.0.0.1", "/v1/state", testToken)
	wantRefusedConn(t, dialFrom(t, addr, "127.0.0.1"))
	other := holdConn(t, addr, "127.0.0.2", "/v1/health", "") // another address
	waitIdleAnonymous(t, n.srv, 1)
	holdConn(t, addr, "127.0.0.2", "/v1/state", testToken)
	// 127.0.0.2 is at its cap with one idle connection that never
	// authenticated: a new one takes its place.
	holdConn(t, addr, "127.0.0.2", "/v1/state", testToken)
	other.wantClosedByNode(t, "the address's idle anonymous connection, making room")
	wantRefusedConn(t, dialFrom(t, addr, "127.0.0.2"))
}

// dialFrom opens a raw connection to addr from the local IP from.
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitDeadline))
	return c
}

// TestAnonymousIdleConnIsClosed: a kept-alive connection on which no request
// has carried a valid token is closed after the short AnonymousIdleTimeout;
// one that authenticated keeps the ordinary idle time-out, also when its
// first request was anonymous.
func TestAnonymousIdleConnIsClosed(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.AnonymousIdleTimeout = 100 * time.Millisecond }, nil)
	addr := serveOn(t, n.srv)
	authed := dialConn(t, "tcp", addr)
	// Pipelined, so that the anonymous first request's idle time cannot end
	// before the second arrives.
	if _, err := io.WriteString(authed, "GET /v1/health HTTP/1.1\r\nHost: civnode\r\n\r\n"+
		"GET /v1/state HTTP/1.1\r\nHost: civnode\r\nAuthorization: Bearer "+testToken+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	abr := bufio.NewReader(authed)
	for _, path := range []string{"/v1/health", "/v1/state"} {
		resp, err := http.ReadResponse(abr, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	anon := holdConn(t, addr, "", "/v1/health", "")
	anon.wantClosedByNode(t, "the idle anonymous connection")
	// The authenticated one went idle first and is still served.
	if resp := rawGetToken(t, authed, abr, "/v1/state", testToken); resp.StatusCode != http.StatusOK {
		t.Errorf("the authenticated connection after the anonymous one closed: %d", resp.StatusCode)
	}
}

// TestConnCapFullOfIdleAnonymous: with the cap filled by idle kept-alive
// connections that never authenticated (the probe's repro), a client with a
// token is served at once: the oldest idle anonymous connection is closed to
// make room.
func TestConnCapFullOfIdleAnonymous(t *testing.T) {
	const maxConns = 10
	n := newTestNodeWith(t, func(o *Options) { o.MaxConns = maxConns; o.MaxConnsPerAddr = -1 }, nil)
	addr := serveOn(t, n.srv)
	var held []heldConn
	for range maxConns {
		held = append(held, holdConn(t, addr, "", "/v1/health", ""))
	}
	if got := oneShotGetToken(addr, "/v1/state", testToken); got != http.StatusOK {
		t.Fatalf("GET /v1/state with the cap full of idle anonymous connections: %d, want 200", got)
	}
	held[0].wantClosedByNode(t, "the oldest idle anonymous connection")
}

// TestConnCapReserveIsForTokens: the last tenth of the cap (at least one
// slot) serves only requests with a valid token. With the rest held by
// anonymous connections that are not idle (these have sent nothing yet), a
// request without a token is answered the cap's 503 and its connection
// closed, and one with a token is served.
func TestConnCapReserveIsForTokens(t *testing.T) {
	const maxConns = 4 // a reserve of 1
	n := newTestNodeWith(t, func(o *Options) { o.MaxConns = maxConns; o.MaxConnsPerAddr = -1 },
		func(s *Server) { s.headerTimeout = waitDeadline })
	addr := serveOn(t, n.srv)
	for range maxConns - 1 {
		dialConn(t, "tcp", addr) // accepted, silent
	}
	wantRefusedConn(t, dialConn(t, "tcp", addr))
	c := dialConn(t, "tcp", addr)
	br := bufio.NewReader(c)
	if resp := rawGetToken(t, c, br, "/v1/state", testToken); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /v1/state with a token in the reserve: %d, close %v; want 200 kept alive", resp.StatusCode, resp.Close)
	}
	// Having authenticated, the connection is served as any other.
	if resp, _ := rawGet(t, c, br, "/v1/health"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/health on the authenticated reserve connection: %d", resp.StatusCode)
	}
}
