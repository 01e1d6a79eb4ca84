package http

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
)

// Tests of the server's own limits in docs/limits.md that no other test file
// holds; the table names the test of every row.

// TestIdleConnectionIsClosed: a kept-alive connection that sends no next
// request is closed after the idle time-out (idleTimeout).
func TestIdleConnectionIsClosed(t *testing.T) {
	n := newTestNodeWith(t, nil, func(s *Server) { s.idleTimeout = 50 * time.Millisecond })
	c := dialConn(t, "tcp", serveOn(t, n.srv))
	br := bufio.NewReader(c)
	if resp, _ := rawGet(t, c, br, "/v1/health"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("status %d, close %v; want 200 kept alive", resp.StatusCode, resp.Close)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("idle connection: read %d bytes, %v; want EOF", n, err)
	}
}

// TestSlowHeadersAreCutOff: a client that does not finish its headers within
// readHeaderTimeout has its connection closed, without an answer.
func TestSlowHeadersAreCutOff(t *testing.T) {
	n := newTestNodeWith(t, nil, func(s *Server) { s.headerTimeout = 50 * time.Millisecond })
	c := dialConn(t, "tcp", serveOn(t, n.srv))
	if _, err := io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHost: civnode\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || len(got) != 0 {
		t.Errorf("read %q, %v; want the connection closed without an answer", got, err)
	}
}

// TestShutdownCutsOffStragglers: a request still running when the shutdown
// grace period ends has its connection closed, and Serve returns.
func TestShutdownCutsOffStragglers(t *testing.T) {
	l := newTestNode(t).log
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger()})
	s.shutdownGrace = 50 * time.Millisecond
	started := make(chan struct{})
	s.handle(http.MethodGet, "/test/straggler", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		close(started)
		<-r.Context().Done() // only the connection's close ends it
		return r.Context().Err()
	}, routeStreaming)
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	reqErr := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/test/straggler", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := (&http.Client{Timeout: waitDeadline}).Do(req)
		if err == nil {
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			err = errors.New("answered: " + resp.Status)
		}
		reqErr <- err
	}()
	<-started
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := <-reqErr; err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("straggler: %v; want its connection closed", err)
	}
}

// TestSlowBodyIsCutOff: a client that does not send its whole request within
// readTimeout gets an error answer and its connection is closed.
func TestSlowBodyIsCutOff(t *testing.T) {
	n := newTestNodeWith(t, nil, func(s *Server) { s.readTimeout = 50 * time.Millisecond })
	c := dialConn(t, "tcp", serveOn(t, n.srv))
	// 10 of the 100 bytes declared.
	if _, err := io.WriteString(c, "POST /v1/node/proof HTTP/1.1\r\nHost: civnode\r\nContent-Type: application/json\r\n"+
		"Content-Length: 100\r\n\r\n{\"nonce\":\""); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 400 || !resp.Close {
		t.Errorf("status %d, close %v (body %s); want an error and Connection: close", resp.StatusCode, resp.Close, body)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("after the answer: read %d bytes, %v; want EOF", n, err)
	}
}

// TestRegistryRouteTimeout: the registry proxy's routes run under their own
// handler time (registryHandlerTimeout), longer than other routes', and a
// registry that never answers is answered when it runs out.
func TestRegistryRouteTimeout(t *testing.T) {
	var hang atomic.Bool
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			<-r.Context().Done()
			return
		}
		time.Sleep(20 * time.Millisecond) // longer than the routes' handler time below
		registryAnswer(w, http.StatusOK, map[string]any{"agents": []any{}})
	}))
	t.Cleanup(reg.Close)
	c, client := registryCore(t, reg.URL)
	sn, err := commands.NewServicenet(commands.ServicenetOptions{Log: c.Log, Registry: client,
		Model: c.Receipts.Decisions(), Accounts: c.PaymentAccounts})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Log: c.Log, OwnerToken: testToken, Logger: discardLogger(), Servicenet: sn,
		PaymentAccounts: c.PaymentAccounts, HandlerTimeout: 5 * time.Millisecond})
	if s.registryTimeout != registryHandlerTimeout {
		t.Errorf("registry route time-out %v, want %v", s.registryTimeout, registryHandlerTimeout)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	n := &testNode{t: t, log: c.Log, srv: s, url: hs.URL}
	if r := n.get("/v1/core/servicenet/agents"); r.status != http.StatusOK {
		t.Fatalf("a registry slower than the handler time: %d (body %s), want 200", r.status, r.body)
	}
	// The registry client's own bound (30 s by default here) is far off: what
	// ends the request is the route's. Either the route answers 503 timeout,
	// or the client, seeing its context end first, 504 registry_timeout.
	hang.Store(true)
	s.registryTimeout = 50 * time.Millisecond
	r := n.get("/v1/core/servicenet/agents")
	if r.status == http.StatusGatewayTimeout {
		r.wantError(t, http.StatusGatewayTimeout, "registry_timeout", "")
	} else {
		r.wantError(t, http.StatusServiceUnavailable, "timeout", "")
	}
}

// TestStreamReplayPagesByBytes: a replay page ends at streamReplayBytes, and
// always holds at least one event, so a bound smaller than any event still
// replays everything, in order, a page per event.
func TestStreamReplayPagesByBytes(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{editServer: func(s *Server) { s.streams.replayBytes = 1 }})
	evs := n.appendEvents("test.a", "test.b", "test.c", "test.d", "test.e")
	c := n.dialOwner(t, "?after_seq=0")
	last := evs[len(evs)-1].Seq
	n.wantSeqs(t, readUntil(t, c, last), 1, last)
}
