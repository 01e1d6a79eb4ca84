package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	n := newTestNode(t)
	for _, path := range []string{"/", "/v1", "/v1/nope", "/v1/health/", "/V1/HEALTH", "/v1/events/export/x"} {
		for _, token := range []string{"", testToken} {
			n.request(http.MethodGet, path, token, nil).wantError(t, http.StatusNotFound, "not_found", "")
		}
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/v1/health"},
		{http.MethodDelete, "/v1/events"},
		{http.MethodPut, "/v1/events/export"},
		{http.MethodPost, "/v1/audit"},
	} {
		r := n.request(tc.method, tc.path, testToken, nil)
		r.wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, http.MethodGet) {
			t.Errorf("%s %s: Allow = %q", tc.method, tc.path, allow)
		}
	}
	r := n.request(http.MethodOptions, "/v1/events", "", nil)
	if r.status != http.StatusNoContent || !strings.Contains(r.header.Get("Allow"), "GET") || len(r.body) != 0 {
		t.Errorf("OPTIONS: %d, Allow %q, body %q", r.status, r.header.Get("Allow"), r.body)
	}
}

func TestPanicIsInternalError(t *testing.T) {
	var logs logBuffer
	n := newTestNodeWith(t, func(o *Options) { o.Logger = debugLogger(&logs) }, func(s *Server) {
		s.handle(http.MethodGet, "/test/panic", func(http.ResponseWriter, *http.Request, httprouter.Params) error {
			panic("boom: secret detail")
		}, 0)
		s.handle(http.MethodGet, "/test/panic-public", func(http.ResponseWriter, *http.Request, httprouter.Params) error {
			panic("boom again")
		}, routePublic|routeStreaming)
		s.handle(http.MethodGet, "/test/fail", func(http.ResponseWriter, *http.Request, httprouter.Params) error {
			return errors.New("disk on fire at /var/secret")
		}, 0)
	})
	for _, path := range []string{"/test/panic", "/test/panic-public", "/test/fail"} {
		r := n.get(path)
		r.wantError(t, http.StatusInternalServerError, "internal", "")
		if strings.Contains(string(r.body), "secret") || strings.Contains(string(r.body), "boom") {
			t.Errorf("%s: details leaked to the client: %s", path, r.body)
		}
	}
	out := logs.String()
	for _, want := range []string{"boom: secret detail", "boom again", "disk on fire", "server_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	// The server still serves.
	if r := n.get("/v1/health"); r.status != http.StatusOK {
		t.Errorf("health after panics: %d", r.status)
	}
}

func TestErrorResponse(t *testing.T) {
	for _, tc := range []struct {
		err      error
		status   int
		code     string
		internal bool
	}{
		{invalidField("limit", "bad"), 400, "invalid_field", false},
		{errUnauthorized, 401, "unauthorized", false},
		{errors.Join(errors.New("ctx"), bodyTooLarge(10)), 413, "body_too_large", false},
		{&Error{Code: "x", Message: "no status"}, 500, "internal", true},
		{eventlog.ErrFailed, 503, "unavailable", true},
		{eventlog.ErrClosed, 503, "unavailable", true},
		{context.DeadlineExceeded, 503, "timeout", false},
		{context.Canceled, 503, "canceled", false},
		{errors.New("anything else"), 500, "internal", true},
	} {
		status, body, internal := errorResponse(tc.err)
		if status != tc.status || body.Code != tc.code || internal != tc.internal {
			t.Errorf("errorResponse(%v) = %d %s %v; want %d %s %v", tc.err, status, body.Code, internal, tc.status, tc.code, tc.internal)
		}
		if tc.status == 500 && body.Error != "internal error" {
			t.Errorf("500 message %q is not generic", body.Error)
		}
	}
}

func TestHandlerTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	n := newTestNodeWith(t, func(o *Options) { o.HandlerTimeout = 50 * time.Millisecond }, func(s *Server) {
		// Ignores its context entirely: the client must still get an answer.
		s.handle(http.MethodGet, "/test/stuck", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			<-release
			return writeJSON(w, map[string]string{"late": "yes"})
		}, 0)
		// Honours its context and returns its error.
		s.handle(http.MethodGet, "/test/patient", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			<-r.Context().Done()
			return r.Context().Err()
		}, 0)
	})
	for _, path := range []string{"/test/stuck", "/test/patient"} {
		start := time.Now()
		r := n.get(path)
		r.wantError(t, http.StatusServiceUnavailable, "timeout", "")
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s answered after %v", path, d)
		}
	}
	// Fast handlers are unaffected.
	if r := n.get("/v1/state"); r.status != http.StatusOK {
		t.Errorf("state: %d", r.status)
	}
}

// TestRequestLog: every request is logged once answered, at Info (probes and
// scrapes at Debug), with its method, route pattern, status, duration, remote
// address and the request id its response carries; never a token, a header
// or the path a client chose.
func TestRequestLog(t *testing.T) {
	var logs logBuffer
	n := newTestNodeWith(t, func(o *Options) { o.Logger = debugLogger(&logs) }, nil)
	var answers []response
	answers = append(answers, n.request(http.MethodGet, "/v1/events?limit=5&token=query-secret", testToken, nil))
	answers = append(answers, n.request(http.MethodGet, "/v1/state", "bad-secret", nil, "X-Request-Id", "client-id-7f3a"))
	answers = append(answers, n.request(http.MethodGet, "/v1/no-such-route/x", testToken, nil, "X-Request-Id", "not sane\tid"))
	answers = append(answers, n.request(http.MethodGet, "/v1/health", "", nil, "X-Request-Id", strings.Repeat("a", 129)))

	var found []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "http request" {
			found = append(found, m)
		}
	}
	if len(found) != len(answers) {
		t.Fatalf("%d request log lines, want %d:\n%s", len(found), len(answers), logs.String())
	}
	ids := map[string]bool{}
	for i, want := range []struct {
		level, route string
		status       float64
		id           string // "" for one the server makes
	}{
		{"INFO", "/v1/events", 200, ""},
		{"INFO", "/v1/state", 401, "client-id-7f3a"},
		{"INFO", "unmatched", 404, ""},
		{"DEBUG", "/v1/health", 200, ""},
	} {
		m, id := found[i], answers[i].header.Get("X-Request-Id")
		if m["level"] != want.level || m["method"] != "GET" || m["route"] != want.route || m["status"] != want.status ||
			m["duration"] == nil || !strings.HasPrefix(fmt.Sprint(m["remote"]), "127.0.0.1:") || m["path"] != nil {
			t.Errorf("log line %v, want %s GET %s %v with a duration and the remote address", m, want.level, want.route, want.status)
		}
		if id == "" || m["request_id"] != id || (want.id != "" && id != want.id) || ids[id] {
			t.Errorf("request %d: X-Request-Id %q, logged %v, want %q or a new one", i, id, m["request_id"], want.id)
		}
		ids[id] = true
	}
	for _, secret := range []string{testToken, "query-secret", "bad-secret", "Bearer", "Authorization"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log contains %q:\n%s", secret, logs.String())
		}
	}
}

// TestRequestLogInfoOnly: at the default level the probes are not logged,
// and every other request is.
func TestRequestLogInfoOnly(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	n := newTestNodeWith(t, func(o *Options) { o.Logger = logger }, nil)
	n.request(http.MethodGet, "/v1/health", "", nil)
	n.request(http.MethodGet, "/v1/ready", "", nil)
	r := n.request(http.MethodGet, "/v1/state", testToken, nil)
	out := logs.String()
	if strings.Count(out, `msg="http request"`) != 1 || !strings.Contains(out, "route=/v1/state") ||
		!strings.Contains(out, "request_id="+r.header.Get("X-Request-Id")) {
		t.Errorf("log at Info:\n%s", out)
	}
}

func TestSaneRequestID(t *testing.T) {
	for id, want := range map[string]bool{
		"": false, "0190c5f4-0000-7000-8000-000000000000": true, "00-4bf92f3577b34da6-01": true,
		"a b": false, "a\"b": false, "é": false, strings.Repeat("x", 128): true, strings.Repeat("x", 129): false,
	} {
		if got := saneRequestID(id); got != want {
			t.Errorf("saneRequestID(%q) = %v", id, got)
		}
	}
}

// Serve finishes in-flight requests when its context ends, then returns nil.
func TestServeShutsDownGracefully(t *testing.T) {
	l := newTestNode(t).log
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger()})
	started := make(chan struct{})
	s.handle(http.MethodGet, "/test/slow", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return writeJSON(w, map[string]string{"done": "yes"})
	}, 0)

	ln := listen(t)
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	var wg sync.WaitGroup
	var status int
	var reqErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequest(http.MethodGet, url+"/test/slow", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			reqErr = err
			return
		}
		resp.Body.Close()
		status = resp.StatusCode
	}()
	<-started
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
	wg.Wait()
	if reqErr != nil || status != http.StatusOK {
		t.Errorf("in-flight request: %d, %v; want 200", status, reqErr)
	}
	if _, err := http.Get(url + "/v1/health"); err == nil {
		t.Error("server still accepts connections after shutdown")
	}
}

// A handler that panics after the client got its timeout answer is still logged.
func TestPanicAfterTimeoutIsLogged(t *testing.T) {
	var logs logBuffer
	n := newTestNodeWith(t, func(o *Options) {
		o.Logger = debugLogger(&logs)
		o.HandlerTimeout = 20 * time.Millisecond
	}, func(s *Server) {
		s.handle(http.MethodGet, "/test/late-panic", func(_ http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			<-r.Context().Done()
			time.Sleep(20 * time.Millisecond)
			panic("late boom")
		}, 0)
	})
	n.get("/test/late-panic").wantError(t, http.StatusServiceUnavailable, "timeout", "")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "late boom") {
		if time.Now().After(deadline) {
			t.Fatal("the late panic was not logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
