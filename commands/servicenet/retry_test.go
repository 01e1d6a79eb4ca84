package servicenet

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// failingThenOK answers fail (with retryAfter, when set) failures times, then
// answers ok.
func failingThenOK(failures int32, fail int, retryAfter, ok string) (func(http.ResponseWriter, *http.Request, []byte), *atomic.Int32) {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		if n.Add(1) <= failures {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			writeJSON(w, fail, `{"error":"later"}`)
			return
		}
		writeJSON(w, 200, ok)
	}, &n
}

func TestRetryReadsUntilTheyAnswer(t *testing.T) {
	calls := map[string]struct {
		answer string
		call   func(*Client) error
	}{
		"ListAgents": {`{"agents":[]}`, func(c *Client) error { _, err := c.ListAgents(context.Background()); return err }},
		"Card":       {`{"agent_id":"a1","name":"A"}`, func(c *Client) error { _, err := c.Card(context.Background(), "a1"); return err }},
		"GetTask":    {`{"task_id":"t1","status":"running"}`, func(c *Client) error { _, err := c.GetTask(context.Background(), "a1", "t1"); return err }},
	}
	for name, tc := range calls {
		for _, status := range []int{408, 429, 500, 502, 503, 504} {
			handle, n := failingThenOK(3, status, "", tc.answer)
			f := newFakeRegistry(t, handle)
			cfg := testConfig(f)
			cfg.Retries = 0 // the default: 3
			c, s := newTestClient(t, cfg)
			if err := tc.call(c); err != nil {
				t.Fatalf("%s after 3×%d: %v", name, status, err)
			}
			if n.Load() != 4 || len(s.all()) != 3 {
				t.Errorf("%s after 3×%d: %d attempts, %d waits; want 4 and 3", name, status, n.Load(), len(s.all()))
			}
		}
	}
}

func TestRetryGivesUpAfterRetries(t *testing.T) {
	handle, n := failingThenOK(100, 503, "7", `{}`)
	f := newFakeRegistry(t, handle)
	cfg := testConfig(f)
	cfg.Retries = 2
	c, _ := newTestClient(t, cfg)
	_, err := c.Card(context.Background(), "a1")
	e := registryError(t, err, ErrUnavailable)
	if n.Load() != 3 || e.Status != 503 || e.RetryAfter != 7*time.Second || !strings.Contains(e.Message, "3 attempts") {
		t.Fatalf("attempts %d, error %+v; want 3 attempts, 503, Retry-After 7s", n.Load(), e)
	}
}

func TestRetryNeverOnRefusals(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 422} {
		handle, n := failingThenOK(100, status, "", `{}`)
		f := newFakeRegistry(t, handle)
		cfg := testConfig(f)
		cfg.Retries = 3
		c, _ := newTestClient(t, cfg)
		if _, err := c.Card(context.Background(), "a1"); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if n.Load() != 1 {
			t.Errorf("%d: %d attempts, want 1", status, n.Load())
		}
	}
}

func TestRetryNeverForInvoke(t *testing.T) {
	for _, status := range []int{408, 429, 500, 503} {
		handle, n := failingThenOK(100, status, "1", `{}`)
		f := newFakeRegistry(t, handle)
		cfg := testConfig(f)
		cfg.Retries = 3
		c, s := newTestClient(t, cfg)
		_, err := c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m"}, nil)
		e := registryError(t, err, ErrUnavailable)
		if n.Load() != 1 || len(s.all()) != 0 || e.Status != status {
			t.Errorf("invoke on %d: %d attempts, %d waits, %+v; want exactly one attempt", status, n.Load(), len(s.all()), e)
		}
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"2", 2 * time.Second},
		{"0", 0},
		{"60", 5 * time.Second}, // capped at BackoffMax
		{testNow.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
		{testNow.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		handle, _ := failingThenOK(1, 429, tc.header, `{"agents":[]}`)
		f := newFakeRegistry(t, handle)
		cfg := testConfig(f)
		cfg.Retries = 1
		cfg.Now = func() time.Time { return testNow.Truncate(time.Second) } // as HTTP dates are
		c, s := newTestClient(t, cfg)
		c.jitter = func(time.Duration) time.Duration { t.Error("jitter used despite Retry-After"); return 0 }
		if _, err := c.ListAgents(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := s.all(); len(got) != 1 || got[0] != tc.want {
			t.Errorf("Retry-After %q: waits %v, want [%v]", tc.header, got, tc.want)
		}
	}
}

func TestRetryBackoffIsCappedFullJitter(t *testing.T) {
	c, err := New(Config{BaseURL: "http://r.example", Sign: func([]byte) []byte { return []byte{1} },
		BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var ceilings []time.Duration
	c.jitter = func(d time.Duration) time.Duration { ceilings = append(ceilings, d); return d / 2 }
	var waits []time.Duration
	for attempt := 1; attempt <= 6; attempt++ {
		waits = append(waits, c.backoff(attempt, &answer{retryAfter: -1}))
	}
	c.backoff(1000, nil) // no overflow
	want := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, w := range want {
		if ceilings[i] != w*time.Millisecond {
			t.Fatalf("ceilings %v, want %v ms", ceilings, want)
		}
	}
	if waits[2] != 200*time.Millisecond {
		t.Errorf("wait %v, want the jitter's draw", waits[2])
	}
	for range 1000 {
		if d := fullJitter(time.Second); d < 0 || d > time.Second {
			t.Fatalf("fullJitter(1s) = %v", d)
		}
	}
}

func TestRetryParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", -1}, {"soon", -1}, {"-3", -1}, {"1.5", -1},
		{"0", 0}, {" 12 ", 12 * time.Second},
		{testNow.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"Mon, 01 Jan 2001 00:00:00 GMT", 0},
	} {
		// http.TimeFormat has whole seconds; testNow has a fraction.
		got := parseRetryAfter(tc.v, testNow.Truncate(time.Second))
		if got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestRetryStopsBeforeTheCallersDeadline: a wait that would outlast the
// caller's deadline is not taken; the caller gets the registry's answer now.
func TestRetryStopsBeforeTheCallersDeadline(t *testing.T) {
	handle, n := failingThenOK(100, 503, "4", `{}`)
	f := newFakeRegistry(t, handle)
	cfg := testConfig(f)
	cfg.Retries = 3
	c, s := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.GetTask(ctx, "a1", "t1")
	e := registryError(t, err, ErrUnavailable)
	if n.Load() != 1 || len(s.all()) != 0 || e.Status != 503 {
		t.Fatalf("%d attempts, waits %v, %+v; want one attempt and no wait", n.Load(), s.all(), e)
	}
}

func TestRetryTransportErrors(t *testing.T) {
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {})
	cfg := testConfig(f)
	cfg.Retries = 2
	f.srv.Close() // nothing listens any more
	c, s := newTestClient(t, cfg)
	_, err := c.ListAgents(context.Background())
	e := registryError(t, err, ErrUnavailable)
	if len(s.all()) != 2 || e.Status != 0 || !strings.Contains(e.Message, "cannot reach the registry") || !strings.Contains(e.Message, "3 attempts") {
		t.Fatalf("waits %v, error %+v; want 2 waits and an unreachable registry", s.all(), e)
	}
	_, err = c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m"}, nil)
	registryError(t, err, ErrUnavailable)
	if len(s.all()) != 2 {
		t.Fatal("invoke retried a transport error")
	}
}

// blockingRegistry accepts requests and never answers until the test ends.
func blockingRegistry(t *testing.T) (*fakeRegistry, *atomic.Int32) {
	release := make(chan struct{})
	var n atomic.Int32
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		n.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	return f, &n
}

func TestRetryTimeoutPerAttempt(t *testing.T) {
	f, n := blockingRegistry(t)
	cfg := testConfig(f)
	cfg.ReadTimeout = 100 * time.Millisecond
	c, _ := newTestClient(t, cfg)

	start := time.Now()
	_, err := c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m"}, nil)
	elapsed := time.Since(start)
	registryError(t, err, ErrTimeout)
	if elapsed < cfg.ReadTimeout || elapsed > 3*time.Second || n.Load() != 1 {
		t.Fatalf("invoke timed out after %v and %d attempts; want about %v and one", elapsed, n.Load(), cfg.ReadTimeout)
	}

	cfg.Retries = 1
	c, _ = newTestClient(t, cfg)
	_, err = c.Card(context.Background(), "a1")
	e := registryError(t, err, ErrTimeout)
	if n.Load() != 3 || !strings.Contains(e.Message, "2 attempts") {
		t.Fatalf("card: %d requests in all, %v; want a second, retried, attempt", n.Load(), e)
	}
}

func TestRetryCallerCancellationIsReturnedAsIs(t *testing.T) {
	f, n := blockingRegistry(t)
	cfg := testConfig(f)
	cfg.Retries = 3
	c, s := newTestClient(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for n.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.ListAgents(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var regErr *Error
	if errors.As(err, &regErr) || len(s.all()) != 0 {
		t.Fatalf("cancellation became %v after %d waits", err, len(s.all()))
	}
	// A deadline of the caller's is a time-out.
	ctx, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = c.Card(ctx, "a1")
	registryError(t, err, ErrTimeout)
}
