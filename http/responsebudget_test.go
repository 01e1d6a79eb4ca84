package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// budgetPage is the page budget of the tests below: a page far larger than
// the kernels' socket buffers on loopback, so that a client that does not read
// holds its page on the server until the write deadline.
const budgetPage = 16 << 20

// newBudgetNode serves 300 events of 64 KiB (19 MB, so a limit=1000 page is
// cut at budgetPage) with a response budget of one page, reads that wait
// wait for it, and a write deadline of writeTimeout. Each response whose
// copying out failed sends its error to sent.
func newBudgetNode(t *testing.T, wait, writeTimeout time.Duration, sent chan<- error) *testNode {
	t.Helper()
	n := newTestNodeWith(t, func(o *Options) {
		o.PageBytes = budgetPage
		o.ResponseBudget = 1 // raised to one page
	}, func(s *Server) {
		s.budgetWait = wait
		s.writeTimeout = writeTimeout
		s.responseSent = func(err error) {
			if err == nil {
				return
			}
			select {
			case sent <- err:
			default:
			}
		}
	})
	pads := make([]int, 300)
	for i := range pads {
		pads[i] = 64 << 10
	}
	n.appendPadded("mission.completed", pads...)
	return n
}

// holdPage asks for a full page on a connection that never reads, and returns
// once the server holds that page's budget.
func (n *testNode) holdPage(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /v1/events?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	for start := time.Now(); n.srv.budget.inUse.Load() < budgetPage/2; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the page for the silent client never took the budget (in use: %d)", n.srv.budget.inUse.Load())
		}
	}
	return conn
}

// TestResponseBudgetRefusesReadersOverIt: a client that asks for a full page
// and never reads it holds the whole response budget until its write deadline;
// meanwhile another reader is answered 503 busy with Retry-After after its
// short wait, having read nothing, while health and the node proof, which are
// not counted, answer at once. Once the silent client is cut off, its budget
// is back and a reader gets its page.
func TestResponseBudgetRefusesReadersOverIt(t *testing.T) {
	sent := make(chan error, 4)
	n := newBudgetNode(t, 100*time.Millisecond, 3*time.Second, sent)
	n.holdPage(t)

	for _, path := range []string{"/v1/events?limit=1000", "/v1/events?limit=1000", "/v1/audit?limit=10"} {
		r := n.get(path)
		r.wantError(t, http.StatusServiceUnavailable, "busy", "")
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("%s: Retry-After %q, want 1", path, r.header.Get("Retry-After"))
		}
	}
	if got := n.srv.budget.refused.Load(); got < 3 {
		t.Errorf("refusals counted: %d, want at least 3", got)
	}
	if r := n.request(http.MethodGet, "/v1/health", "", nil); r.status != http.StatusOK {
		t.Fatalf("health while the budget is held: %d %s", r.status, r.body)
	}
	if r := n.request(http.MethodPost, "/v1/node/proof", "", strings.NewReader(`{"nonce":"`+proofNonce+`"}`)); r.status != http.StatusOK {
		t.Fatalf("node proof while the budget is held: %d %s", r.status, r.body)
	}

	select {
	case err := <-sent:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the silent client's page ended with %v, want the write deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the silent client was not cut off")
	}
	n.pageThrough(t, "", 1000, budgetPage)
	waitBudgetFree(t, n.srv.budget)

	fams, _ := scrape(t, n, testToken)
	if got := sample(t, fams, "civnode_http_response_budget_refusals_total", nil).GetCounter().GetValue(); got < 3 {
		t.Errorf("refusals_total %v, want at least 3", got)
	}
	if got := sample(t, fams, "civnode_http_response_budget_bytes", nil).GetGauge().GetValue(); got != float64(n.srv.pageReservation()) {
		t.Errorf("response_budget_bytes %v, want one page reservation, %d", got, n.srv.pageReservation())
	}
	// The scrape's own answer holds a chunk while it is built.
	if got := sample(t, fams, "civnode_http_response_budget_used_bytes", nil).GetGauge().GetValue(); got > chunkSize {
		t.Errorf("response_budget_used_bytes %v once every page is sent", got)
	}
}

// TestResponseBudgetWaitIsBrief: a reader over the budget waits in line; when
// the bytes come back within its wait (here the silent client goes away), it
// is served rather than refused. The test cuts the silent client itself, once
// the reader is in line, and no deadline a busy machine could reach bounds
// the reader.
func TestResponseBudgetWaitIsBrief(t *testing.T) {
	sent := make(chan error, 4)
	n := newBudgetNode(t, 2*time.Minute, 2*time.Minute, sent)
	silent := n.holdPage(t)

	got := make(chan response, 1)
	go func() { got <- n.get("/v1/events?limit=1000") }()
	for start := time.Now(); budgetWaiters(n.srv.budget) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatal("the reader never waited in line for the budget")
		}
	}
	silent.Close()

	select {
	case r := <-got:
		if p, heads := eventsOf(t, r); len(heads) == 0 || p.Total < 300 {
			t.Fatalf("the waiting reader got %d events of %d", len(heads), p.Total)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiting reader was not served once the silent client went away")
	}
	if got := n.srv.budget.refused.Load(); got != 0 {
		t.Errorf("refusals counted: %d, want none", got)
	}
	waitBudgetFree(t, n.srv.budget)
}

// budgetWaiters is how many reads wait in line for the budget.
func budgetWaiters(b *responseBudget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// waitBudgetFree waits for every response to have given its budget back (the
// last release follows the last write, which the client may read first).
func waitBudgetFree(t *testing.T, b *responseBudget) {
	t.Helper()
	for start := time.Now(); b.inUse.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("%d bytes of the budget still held after every response", b.inUse.Load())
		}
	}
}

// TestResponseBudgetLine: acquire waits first come, first served; force goes
// over the size and holds later acquirers until released; a request larger
// than the budget, or one whose context ends, gives up and leaves the line.
func TestResponseBudgetLine(t *testing.T) {
	b := newResponseBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, 101); !errors.Is(err, errBusy) {
		t.Fatalf("a request over the whole budget: %v, want errBusy", err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 50); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request that does not fit in time: %v", err)
	}
	big, small := make(chan error), make(chan error)
	go func() { big <- b.acquire(ctx, 80) }()
	for b.waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	go func() { small <- b.acquire(ctx, 10) }() // fits, but waits behind big
	for b.waiting() != 2 {
		time.Sleep(time.Millisecond)
	}
	b.force(50) // 110 of 100
	b.release(60)
	select {
	case err := <-big:
		t.Fatalf("granted 80 with 50 of 100 in use: %v", err)
	case <-small:
		t.Fatal("a later small request overtook the line")
	default:
	}
	b.release(50)
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	b.release(90)
	if got := b.inUse.Load(); got != 0 {
		t.Fatalf("in use after every release: %d", got)
	}
}

// waiting is the length of the line (tests).
func (b *responseBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

// TestResponseBudgetCountsMCPPages: a list tool's page is held in memory as a
// list route's is, so it takes its page from the same budget. While a silent
// client holds the budget, query_events is refused busy (single call and in a
// batch), a tool that builds no page still answers, and once the budget is
// back the same call returns its page and gives the budget back.
func TestResponseBudgetCountsMCPPages(t *testing.T) {
	sent := make(chan error, 4)
	n := newBudgetNode(t, 100*time.Millisecond, 3*time.Second, sent)
	n.holdPage(t)
	headers := mcpOldSession(t, n.url, testToken)
	refusedBefore := n.srv.budget.refused.Load()

	single := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_events","arguments":{"limit":1000}}}`
	var ans batchAnswer
	r := mcpRawPost(t, n.url, testToken, single, headers...)
	if err := json.Unmarshal(r.body, &ans); err != nil || r.status != http.StatusOK {
		t.Fatalf("query_events answered %d %.500s (%v)", r.status, r.body, err)
	}
	if ans.code() != "busy" {
		t.Fatalf("query_events while the budget is held: code %q, want busy: %.500s", ans.code(), r.body)
	}
	batch := mcpRawPost(t, n.url, testToken, toolCalls(t, 2, "query_events", map[string]any{"limit": 1000}), headers...)
	for i, a := range batchAnswers(t, batch, 2) {
		if a.code() != "busy" {
			t.Errorf("batch call %d while the budget is held: code %q, want busy", i+1, a.code())
		}
	}
	if got := n.srv.budget.refused.Load() - refusedBefore; got < 3 {
		t.Errorf("MCP refusals counted: %d, want at least 3", got)
	}
	state := mcpRawPost(t, n.url, testToken, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_identity","arguments":{"public_id":"nobody"}}}`, headers...)
	// A tool that builds no page is not held back: an unknown identity is
	// answered (here: no such identity), not refused busy.
	if err := json.Unmarshal(state.body, &ans); err != nil || state.status != http.StatusOK || ans.code() == "busy" || ans.code() == "" {
		t.Fatalf("get_identity while the budget is held answered %d %.500s", state.status, state.body)
	}

	select {
	case <-sent:
	case <-time.After(20 * time.Second):
		t.Fatal("the silent client was not cut off")
	}
	waitBudgetFree(t, n.srv.budget)
	r = mcpRawPost(t, n.url, testToken, single, headers...)
	var page batchAnswer
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK || page.code() != "" || page.Result == nil {
		t.Fatalf("query_events once the budget is back answered %d %.500s", r.status, r.body)
	}
	waitBudgetFree(t, n.srv.budget)
}
