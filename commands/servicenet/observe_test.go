package servicenet

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// attempts records what Config.Observe is told.
type attempts struct {
	mu  sync.Mutex
	got []Attempt
}

func (a *attempts) observe(at Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, at)
}

// outcomes lists "op outcome" of every attempt so far.
func (a *attempts) outcomes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, at := range a.got {
		out = append(out, at.Op+" "+at.Outcome)
		if at.Duration < 0 {
			out = append(out, "negative duration")
		}
	}
	return out
}

// TestObserveEachAttempt: every exchange is reported once with its operation
// and a fixed-vocabulary outcome, retries included.
func TestObserveEachAttempt(t *testing.T) {
	status := map[string]int{
		"/v1/agents":                     http.StatusServiceUnavailable,
		"/v1/agents/gone":                http.StatusNotFound,
		"/v1/agents/paid/invoke":         http.StatusPaymentRequired,
		"/v1/agents/a1/tasks/t1/get":     http.StatusBadRequest,
		"/v1/agents/a1":                  http.StatusOK,
		"/v1/agents/a1/invoke":           http.StatusOK,
		"/v1/agents/broken/tasks/t1/get": http.StatusTeapot,
	}
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		code := status[r.URL.Path]
		switch r.URL.Path {
		case "/v1/agents/a1":
			writeJSON(w, code, `{"agent_id":"a1","name":"A","description":"d"}`)
		case "/v1/agents/a1/invoke":
			writeJSON(w, code, `{"status":"completed","result":{}}`)
		default:
			writeJSON(w, code, `{"error":"no"}`)
		}
	})
	rec := &attempts{}
	cfg := testConfig(f)
	cfg.Retries = 1
	cfg.Observe = rec.observe
	c, _ := newTestClient(t, cfg)
	ctx := context.Background()

	c.ListAgents(ctx) // 503, retried once: two attempts
	c.Card(ctx, "gone")
	c.Card(ctx, "a1")
	c.Invoke(ctx, "paid", InvokeRequest{Message: "m"}, nil)
	c.Invoke(ctx, "a1", InvokeRequest{Message: "m"}, nil)
	c.GetTask(ctx, "a1", "t1")
	c.GetTask(ctx, "broken", "t1")

	want := []string{
		"list_agents server_error", "list_agents server_error",
		"get_card client_error",
		"get_card ok",
		"invoke payment_required",
		"invoke ok",
		"get_task client_error",
		"get_task client_error",
	}
	if got := rec.outcomes(); !slices.Equal(got, want) {
		t.Fatalf("observed\n%q\nwant\n%q", got, want)
	}
}

// TestObserveNoAnswer: an attempt that gets no answer is a time-out or an
// unreachable registry, never an HTTP outcome.
func TestObserveNoAnswer(t *testing.T) {
	f, _ := blockingRegistry(t)
	rec := &attempts{}
	cfg := testConfig(f)
	cfg.ReadTimeout = 50 * time.Millisecond
	cfg.Observe = rec.observe
	c, _ := newTestClient(t, cfg)
	c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m"}, nil)

	closed := newFakeRegistry(t, func(http.ResponseWriter, *http.Request, []byte) {})
	cfg = testConfig(closed)
	cfg.Observe = rec.observe
	closed.srv.Close()
	c, _ = newTestClient(t, cfg)
	c.ListAgents(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.ListAgents(ctx)

	want := []string{"invoke timeout", "list_agents unreachable", "list_agents canceled"}
	if got := rec.outcomes(); !slices.Equal(got, want) {
		t.Fatalf("observed %q, want %q", got, want)
	}
}
