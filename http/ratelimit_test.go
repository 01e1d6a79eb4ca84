package http

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testClock is a clock tests move by hand, so that a bucket refills only when
// the test says so.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestKeyedLimiters(t *testing.T) {
	clock := newTestClock()
	k := newKeyedLimiters(2, 3, 10) // 2 a second, 3 at once
	k.now = clock.now

	for i := range 3 {
		if wait, _ := k.take("a"); wait != 0 {
			t.Fatalf("take %d of the burst: wait %v, want 0", i+1, wait)
		}
	}
	wait, first := k.take("a")
	if wait != 500*time.Millisecond || !first {
		t.Fatalf("over the burst: wait %v first %v, want 500ms, true", wait, first)
	}
	if wait, first := k.take("a"); wait != 500*time.Millisecond || first {
		t.Fatalf("again: wait %v first %v, want 500ms, false (one log line per episode)", wait, first)
	}
	if wait, _ := k.take("b"); wait != 0 {
		t.Fatalf("another key: wait %v, want 0", wait)
	}
	clock.advance(200 * time.Millisecond)
	if wait, _ := k.take("a"); wait != 300*time.Millisecond {
		t.Fatalf("after 200ms: wait %v, want 300ms", wait)
	}
	clock.advance(300 * time.Millisecond)
	if wait, _ := k.take("a"); wait != 0 {
		t.Fatalf("after the wait: wait %v, want 0", wait)
	}
	// A refusal is a new episode only once the bucket has filled up again.
	for range 3 {
		k.take("a")
	}
	if _, first := k.take("a"); first {
		t.Error("a refusal before the bucket refilled started a new episode")
	}
	clock.advance(2 * time.Second)
	for range 3 {
		k.take("a")
	}
	if _, first := k.take("a"); !first {
		t.Error("a refusal after the bucket refilled did not start a new episode")
	}

	// wait and spend: the failed-authentication side.
	if w := k.wait("c"); w != 0 {
		t.Errorf("wait of an unknown key = %v, want 0", w)
	}
	if _, ok := k.byKey["c"]; ok {
		t.Error("wait created a bucket")
	}
	for i := range 3 {
		if first := k.spend("c"); first != (i == 2) {
			t.Errorf("spend %d: first = %v", i+1, first)
		}
	}
	if w := k.wait("c"); w != 500*time.Millisecond {
		t.Errorf("wait after the burst = %v, want 500ms", w)
	}
}

func TestKeyedLimitersAreBounded(t *testing.T) {
	clock := newTestClock()
	k := newKeyedLimiters(1, 1, 3)
	k.now = clock.now
	for _, key := range []string{"a", "b", "c"} {
		k.take(key)
	}
	k.take("a") // a is now the most recently used
	k.take("d") // over the cap: b, the least recently used, goes
	if got := slices.Sorted(maps.Keys(k.byKey)); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Errorf("keys %v, want [a c d]", got)
	}
	// Unused for the idle time, every key goes when the next one comes.
	clock.advance(limiterIdle)
	k.take("e")
	if got := slices.Sorted(maps.Keys(k.byKey)); !slices.Equal(got, []string{"e"}) {
		t.Errorf("keys %v, want [e]", got)
	}
	if k.lru.Len() != 1 || k.size.Load() != 1 {
		t.Errorf("lru holds %d, size %d; want 1", k.lru.Len(), k.size.Load())
	}
	// A slow bucket is kept until it has refilled.
	if slow := newKeyedLimiters(0.001, 1, 3); slow.idle != 1000*time.Second {
		t.Errorf("idle of a bucket refilling in 1000s = %v", slow.idle)
	}
}

func TestClientAddress(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"127.0.0.1:50000", "127.0.0.1"},
		{"127.0.0.1:50001", "127.0.0.1"},
		{"[::ffff:10.0.0.7]:80", "10.0.0.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"unix:control.sock", "unix:control.sock"},
		{"@", "@"},
	} {
		if got := clientAddress(tc.remote); got != tc.want {
			t.Errorf("clientAddress(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// wantRetryAfter checks a 429's Retry-After: whole seconds, at least 1, and
// want when want is not 0.
func wantRetryAfter(t *testing.T, r response, want int) {
	t.Helper()
	v := r.header.Get("Retry-After")
	secs, err := strconv.Atoi(v)
	if err != nil || secs < 1 {
		t.Fatalf("Retry-After = %q, want whole seconds ≥ 1", v)
	}
	if want != 0 && secs != want {
		t.Errorf("Retry-After = %d, want %d", secs, want)
	}
}

// TestRateLimitPerToken: a token over its limit is refused 429 with
// Retry-After on the limited routes, before anything is read or appended;
// another token and the unlimited routes are not affected.
func TestRateLimitPerToken(t *testing.T) {
	clock := newTestClock()
	n := newCivNodeServing(t, nil, func(o *Options) { o.RateLimit, o.RateBurst = 0.5, 3 })
	n.srv.tokenLimits.now = clock.now
	did, _ := n.bootstrap(map[string]any{"display_name": "Alice", "public_id": "alice"}) // 1 of owner's 3
	agent := n.agentToken("alice")
	profile := map[string]any{"agent_did": did, "faction": "order"}
	n.civPost("/v1/civilization/profile", profile).wantOK(t, nil) // 2
	n.get("/v1/events?limit=1")                                   // 3: the event log is limited too
	tip := n.log.Tip()

	r := n.civPost("/v1/civilization/profile", profile)
	r.wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	wantRetryAfter(t, r, 2) // one request at 0.5 a second
	if got := n.log.Tip(); got != tip {
		t.Errorf("a refused write appended: tip %+v → %+v", tip, got)
	}
	// A body that would not even parse is refused the same: the limit comes first.
	n.civSend(http.MethodPost, "/v1/core/missions", testToken, "not json").wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	for _, path := range []string{"/v1/events", "/v1/events/export"} {
		r := n.get(path)
		r.wantError(t, http.StatusTooManyRequests, "rate_limited", "")
		wantRetryAfter(t, r, 2)
	}
	r = n.request(http.MethodPost, "/mcp", testToken, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	r.wantError(t, http.StatusTooManyRequests, "rate_limited", "")

	// The other reads, health and another token are not limited.
	for _, path := range []string{"/v1/state", "/v1/civilization/identities", "/v1/core/missions", "/v1/audit"} {
		if r := n.get(path); r.status != http.StatusOK {
			t.Errorf("GET %s: %d (body %.200s), want 200", path, r.status, r.body)
		}
	}
	if r := n.request(http.MethodGet, "/v1/health", "", nil); r.status != http.StatusOK {
		t.Errorf("health: %d", r.status)
	}
	n.civSend(http.MethodPost, "/v1/civilization/profile", agent, profile).wantOK(t, nil)

	// Once the bucket has a token again the owner is admitted.
	clock.advance(2 * time.Second)
	n.civPost("/v1/civilization/profile", profile).wantOK(t, nil)
	n.civPost("/v1/civilization/profile", profile).wantError(t, http.StatusTooManyRequests, "rate_limited", "")
}

// TestRateLimitSparesHealthAndStream: with its budget spent, a token still
// opens streams, and health answers anyone.
func TestRateLimitSparesHealthAndStream(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{editServer: func(s *Server) {
		s.tokenLimits = newKeyedLimiters(0.001, 1, maxLimiterKeys)
	}})
	n.get("/v1/events")
	n.get("/v1/events").wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	for range 3 {
		c := n.dialOwner(t, "")
		c.CloseNow()
		if r := n.request(http.MethodGet, "/v1/health", "", nil); r.status != http.StatusOK {
			t.Errorf("health: %d", r.status)
		}
	}
}

// TestRateLimitOff: a negative RateLimit turns the limit off.
func TestRateLimitOff(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.RateLimit, o.RateBurst = -1, 1 }, nil)
	if n.srv.tokenLimits != nil {
		t.Fatal("limiters built with the limit off")
	}
	for range 5 {
		if r := n.get("/v1/events"); r.status != http.StatusOK {
			t.Fatalf("GET /v1/events: %d", r.status)
		}
	}
}

// TestRateLimitedRoutes holds the rule of which routes the per-token limit
// covers (rateLimitedRoute, docs/limits.md): every authenticated POST, the
// registry proxy's reads, the event log's query and export, and the
// transparency log's reads of the tree; no other GET.
func TestRateLimitedRoutes(t *testing.T) {
	w := newMCPWorld(t)
	s := w.srv
	limitedGets := []string{
		"GET /v1/events", "GET /v1/events/export",
		"GET /v1/core/servicenet/agents", "GET /v1/core/servicenet/agents/:agent_id",
		"GET /v1/transparency", "GET /v1/transparency/checkpoint", "GET /v1/transparency/proof/inclusion",
		"GET /v1/transparency/proof/consistency", "GET /v1/transparency/tile/*tile",
		"GET /v1/transparency/seal", "GET /v1/transparency/events/*bundle",
	}
	var posts int
	for _, route := range s.routeTable {
		limited := slices.Contains(s.limitedRoutes, route)
		method, _, _ := strings.Cut(route, " ")
		// The public POSTs carry no token: node proof, and the witness's
		// add-checkpoint, which has a per-address limit of its own.
		want := slices.Contains(limitedGets, route) || method == http.MethodPost && route != "POST /v1/node/proof" && route != "POST /v1/witness/add-checkpoint"
		if limited != want {
			t.Errorf("%s: limited %v, want %v", route, limited, want)
		}
		if method == http.MethodPost {
			posts++
		}
	}
	for _, route := range append(limitedGets, "POST /mcp", "POST /v1/core/servicenet/agents/:agent_id/invoke",
		"POST /v1/core/missions", "POST /v1/admin/tokens") {
		if !slices.Contains(s.routeTable, route) {
			t.Errorf("%s is not served here; the test does not see it", route)
		}
	}
	if posts < 15 {
		t.Errorf("only %d POST routes: the server is not fully wired", posts)
	}
}

// TestFailedAuthPerAddress: an address that has spent its failed
// authentications is refused 429 before its token is looked at, until its
// bucket has a token again.
func TestFailedAuthPerAddress(t *testing.T) {
	clock := newTestClock()
	n := newTestNodeWith(t, nil, func(s *Server) { s.authFails.now = clock.now })
	for i := range authFailBurst {
		n.request(http.MethodGet, "/v1/state", "wrong", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
		if t.Failed() {
			t.Fatalf("failure %d", i+1)
		}
	}
	audited := len(n.auditEntries("auth.failed"))
	r := n.request(http.MethodGet, "/v1/state", "wrong", nil)
	r.wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	wantRetryAfter(t, r, 1)
	// The good token from the same address is refused too: it is not looked at.
	n.get("/v1/state").wantError(t, http.StatusTooManyRequests, "rate_limited", "")
	// Health needs no token and is never refused.
	if r := n.request(http.MethodGet, "/v1/health", "", nil); r.status != http.StatusOK {
		t.Errorf("health: %d", r.status)
	}
	if got := len(n.auditEntries("auth.failed")); got != audited {
		t.Errorf("refused requests were audited: %d → %d auth.failed entries", audited, got)
	}
	// One token's worth of time later, one request is let through to be checked.
	clock.advance(time.Second / time.Duration(authFailRate))
	if r := n.get("/v1/state"); r.status != http.StatusOK {
		t.Fatalf("good token after the wait: %d (body %s)", r.status, r.body)
	}
	n.request(http.MethodGet, "/v1/state", "wrong", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	n.get("/v1/state").wantError(t, http.StatusTooManyRequests, "rate_limited", "")
}
