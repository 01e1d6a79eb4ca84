package servicenet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A fake registry over real HTTP. It checks the node credential of every
// request it receives, the way a registry would, and records what it saw.

var (
	testNodeKey    = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	testNodeDID    = "did:key:z6MktestNode"
	testCredential = "reg-cred-5f2b7c1e9a"
	// testNow is the injected clock of most tests.
	testNow = time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
)

// seen is one request as the fake received it.
type seen struct {
	Method string
	Path   string // r.URL.EscapedPath(), as sent on the wire
	Header http.Header
	Body   []byte
}

type fakeRegistry struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	requests []seen
	// wantCredential is the bearer the fake expects; "" expects none.
	wantCredential string
}

// newFakeRegistry starts a registry whose answers come from handle; handle
// gets the request body already read.
func newFakeRegistry(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{t: t, wantCredential: testCredential}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake registry: read body: %v", err)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, seen{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body})
		wantCred := f.wantCredential
		f.mu.Unlock()
		f.verify(r, body, wantCred)
		handle(w, r, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// verify checks the node credential (docs/servicenet.md) as a registry would.
func (f *fakeRegistry) verify(r *http.Request, body []byte, wantCred string) {
	t := f.t
	if got, want := r.Header.Get("Authorization"), "Bearer "+wantCred; wantCred == "" && got != "" || wantCred != "" && got != want {
		t.Errorf("%s %s: Authorization = %q, want %q", r.Method, r.URL.Path, got, want)
	}
	if got := r.Header.Get("X-Node-DID"); got != testNodeDID {
		t.Errorf("%s %s: X-Node-DID = %q", r.Method, r.URL.Path, got)
	}
	ts := r.Header.Get("X-Node-Timestamp")
	if _, err := time.Parse(time.RFC3339, ts); err != nil || len(ts) != len("2006-01-02T15:04:05Z") {
		t.Errorf("%s %s: X-Node-Timestamp %q is not RFC 3339 UTC seconds", r.Method, r.URL.Path, ts)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(r.Header.Get("X-Node-Signature"))
	if err != nil {
		t.Errorf("%s %s: X-Node-Signature is not padded standard base64: %v", r.Method, r.URL.Path, err)
		return
	}
	msg := SigningBytes(r.Method, r.URL.EscapedPath(), ts, body)
	if !ed25519.Verify(testNodeKey.Public().(ed25519.PublicKey), msg, sig) {
		t.Errorf("%s %s: X-Node-Signature does not verify over %q", r.Method, r.URL.EscapedPath(), msg)
	}
}

func (f *fakeRegistry) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.requests...)
}

func (f *fakeRegistry) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// testConfig is a client config of f with a fixed clock, no card cache and
// retries that do not sleep; opts adjust it.
func testConfig(f *fakeRegistry) Config {
	return Config{
		BaseURL:    f.srv.URL,
		Credential: testCredential,
		NodeDID:    testNodeDID,
		Sign:       func(msg []byte) []byte { return ed25519.Sign(testNodeKey, msg) },
		Now:        func() time.Time { return testNow },
		CardTTL:    -1,
		Retries:    -1,
	}
}

// newTestClient builds a client of cfg whose retries record their waits
// instead of sleeping.
func newTestClient(t *testing.T, cfg Config) (*Client, *sleeps) {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s := &sleeps{}
	c.sleep = s.sleep
	return c, s
}

// sleeps records the backoff waits of a client.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// writeJSON answers status with body verbatim.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// registryError asserts err is an *Error of kind and returns it.
func registryError(t *testing.T, err error, kind ErrorKind) *Error {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error = %T %v, want *Error of kind %d", err, err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("error kind = %d (%v), want %d", e.Kind, e, kind)
	}
	return e
}
