package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testSeed fixes the node key, so node_did and public_key are the same in every run.
var testSeed = []byte("civnode-http-test-seed-32-bytes!")

type testNode struct {
	t   *testing.T
	log *eventlog.Log
	srv *Server
	url string
}

// newTestNode opens an in-memory log and serves it through httptest.
func newTestNode(t *testing.T) *testNode {
	t.Helper()
	return newTestNodeWith(t, nil, nil)
}

// newTestNodeWith is newTestNode with the options and then the server adjusted
// before it starts serving.
func newTestNodeWith(t *testing.T, editOpts func(*Options), editServer func(*Server)) *testNode {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(testSeed),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	opts := Options{Log: l, OwnerToken: testToken, Logger: slog.New(slog.DiscardHandler)}
	if editOpts != nil {
		editOpts(&opts)
	}
	s := New(opts)
	if editServer != nil {
		editServer(s)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &testNode{t: t, log: l, srv: s, url: hs.URL}
}

// appendEvents appends one event per type, in order.
func (n *testNode) appendEvents(types ...string) []eventlog.Event {
	n.t.Helper()
	var out []eventlog.Event
	for i, typ := range types {
		evs, err := n.log.Append(context.Background(), eventlog.Draft{Type: typ, Payload: map[string]any{"i": i, "note": "<&>"}})
		if err != nil {
			n.t.Fatal(err)
		}
		out = append(out, evs...)
	}
	return out
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// request sends a request with an optional bearer token ("" for none) and optional
// extra headers as name, value pairs. Transparent gzip is off so tests see the
// bytes the server sent.
func (n *testNode) request(method, path, token string, body io.Reader, headers ...string) response {
	n.t.Helper()
	req, err := http.NewRequest(method, n.url+path, body)
	if err != nil {
		n.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (n *testNode) get(path string) response {
	n.t.Helper()
	return n.request(http.MethodGet, path, testToken, nil)
}

// decode unmarshals the body into v and checks the JSON content type.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json (body %s)", ct, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// wantError checks an error response's status, code and field, and that the body
// has exactly the keys of the error shape (docs/api.md, "Conventions").
func (r response) wantError(t *testing.T, status int, code, field string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	var m map[string]any
	r.decode(t, &m)
	if m["code"] != code {
		t.Errorf("code = %v, want %q (body %s)", m["code"], code, r.body)
	}
	if msg, ok := m["error"].(string); !ok || msg == "" {
		t.Errorf("error message missing in %s", r.body)
	}
	got, has := m["field"]
	switch {
	case field == "" && has:
		t.Errorf("field = %v, want it omitted", got)
	case field != "" && got != field:
		t.Errorf("field = %v, want %q", got, field)
	}
	for k := range m {
		if k != "error" && k != "code" && k != "field" {
			t.Errorf("unexpected key %q in error body %s", k, r.body)
		}
	}
	if strings.Contains(string(r.body), testToken) {
		t.Errorf("error body contains the token")
	}
}

// auditEntries reads the audit log directly.
func (n *testNode) auditEntries(action string) []eventlog.AuditEntry {
	n.t.Helper()
	es, err := n.log.AuditEntries(eventlog.AuditQuery{Action: action, Limit: 1000})
	if err != nil {
		n.t.Fatal(err)
	}
	return es
}

// logBuffer collects log output from server goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// debugLogger returns a logger that records everything at Debug and above.
func debugLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func containsBytes(b []byte, s string) bool { return strings.Contains(string(b), s) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
