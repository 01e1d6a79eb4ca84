package http

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/eventlogtest"
)

func TestHealthNeedsNoToken(t *testing.T) {
	n := newTestNode(t)
	for _, tc := range []struct{ name, token string }{
		{"no token", ""},
		{"owner token", testToken},
		{"wrong token", "not-the-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.request(http.MethodGet, "/v1/health", tc.token, nil)
			if r.status != http.StatusOK {
				t.Fatalf("status = %d, want 200 (body %s)", r.status, r.body)
			}
			var body map[string]any
			r.decode(t, &body)
			if len(body) != 1 || body["status"] != "ok" {
				t.Errorf("body = %s, want {\"status\":\"ok\"}", r.body)
			}
		})
	}
	if got := n.auditEntries("auth.failed"); len(got) != 0 {
		t.Errorf("health with a wrong token was audited as a failed authentication: %v", got)
	}
}

// TestHealthAfterCorruptRead serves a log whose store has a damaged block in
// an old event, outside the tail that Open checks: health is 200 until a read
// reaches the block; that request gets 500, and from then on health is 503 and
// writes are refused.
func TestHealthAfterCorruptRead(t *testing.T) {
	dir := t.TempDir()
	key := ed25519.NewKeyFromSeed(testSeed)
	open := func(tailCheck int) *eventlog.Log {
		l, err := eventlog.Open(eventlog.Options{Dir: dir, Key: key, TailCheck: tailCheck, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open(0)
	// Chained hashes as padding: Snappy finds no repeats in them, so event 50's
	// bytes appear literally in the sstable.
	h := sha256.Sum256([]byte("pad"))
	var drafts []eventlog.Draft
	var pad string
	for seq := 2; seq <= 300; seq++ {
		var p string
		for range 8 {
			h = sha256.Sum256(h[:])
			p += hex.EncodeToString(h[:])
		}
		if seq == 50 {
			pad = p
		}
		drafts = append(drafts, eventlog.Draft{Type: "test.padded", Payload: map[string]any{"seq": seq, "pad": p}})
	}
	if _, err := l.Append(context.Background(), drafts...); err != nil {
		t.Fatal(err)
	}
	l.Close()
	open(0).Close() // opening moves the WAL into an sstable
	if _, err := eventlogtest.FlipInSSTable(dir, pad); err != nil {
		t.Fatal(err)
	}

	l = open(16)
	t.Cleanup(func() { l.Close() })
	s := New(Options{Log: l, OwnerToken: testToken, Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	n := &testNode{t: t, log: l, srv: s, url: hs.URL}

	if r := n.request(http.MethodGet, "/v1/health", "", nil); r.status != http.StatusOK {
		t.Fatalf("health before the damage is read: %d %s", r.status, r.body)
	}
	if r := n.request(http.MethodGet, "/v1/ready", "", nil); r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"ready":true}` {
		t.Fatalf("ready before the damage is read: %d %s", r.status, r.body)
	}
	n.get("/v1/events?limit=300").wantError(t, http.StatusInternalServerError, "internal", "")
	r := n.request(http.MethodGet, "/v1/health", "", nil)
	var body map[string]any
	r.decode(t, &body)
	if r.status != http.StatusServiceUnavailable || len(body) != 1 || body["status"] != "unavailable" {
		t.Errorf("health after a corrupt read: %d %s, want 503 {\"status\":\"unavailable\"}", r.status, r.body)
	}
	if r := n.request(http.MethodGet, "/v1/ready", "", nil); r.status != http.StatusServiceUnavailable || strings.TrimSpace(string(r.body)) != `{"ready":false,"reason":"log_failed"}` {
		t.Errorf("ready after a corrupt read: %d %s, want 503 log_failed", r.status, r.body)
	}
	if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.after", Payload: map[string]int{"n": 1}}); !errors.Is(err, eventlog.ErrFailed) {
		t.Errorf("append after a corrupt read: %v, want ErrFailed", err)
	}
}

// TestReadyTurnsFalseOnShutdown: once Serve begins to shut down, a request
// still in flight on a kept-alive connection sees the node not ready, while
// health stays ok.
func TestReadyTurnsFalseOnShutdown(t *testing.T) {
	l := newTestNode(t).log
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger()})
	if !readyAnswer(t, s, "ready", true) {
		t.Fatal("a new server is not ready")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, listen(t)) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	readyAnswer(t, s, "shutting_down", false)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/health", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("health while stopping: %d %s", rec.Code, rec.Body)
	}
}

// readyAnswer asks s for GET /v1/ready and checks the answer.
func readyAnswer(t *testing.T, s *Server, reason string, ready bool) bool {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/ready", nil))
	want, status := `{"ready":false,"reason":"`+reason+`"}`, http.StatusServiceUnavailable
	if ready {
		want, status = `{"ready":true}`, http.StatusOK
	}
	if rec.Code != status || strings.TrimSpace(rec.Body.String()) != want || rec.Header().Get("X-Request-Id") == "" {
		t.Errorf("ready: %d %s (X-Request-Id %q), want %d %s", rec.Code, rec.Body, rec.Header().Get("X-Request-Id"), status, want)
		return false
	}
	return true
}
