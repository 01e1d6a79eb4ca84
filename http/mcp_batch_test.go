package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The JSON-RPC batches of MCP 2025-03-26 (mcp_batch.go, docs/limits.md). Each
// test speaks as a 2025-03-26 client does: initialize, the initialized
// notification, then the batch, with Mcp-Session-Id if the server set one.

// mcpOldSession negotiates 2025-03-26 with token on the node at url and
// returns the headers the batch must carry.
func mcpOldSession(t *testing.T, url, token string) []string {
	t.Helper()
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26",` +
		`"capabilities":{},"clientInfo":{"name":"old-client","version":"1"}}}`
	r := mcpRawPost(t, url, token, initialize)
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &init); err != nil || r.status != http.StatusOK || init.Result.ProtocolVersion != "2025-03-26" {
		t.Fatalf("initialize at 2025-03-26 answered %d %s", r.status, r.body)
	}
	var headers []string
	if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
		headers = append(headers, "Mcp-Session-Id", sid)
	}
	if r := mcpRawPost(t, url, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers...); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized answered %d %s", r.status, r.body)
	}
	return headers
}

// mcpRawPost posts a JSON-RPC body to url's /mcp as an MCP client would.
func mcpRawPost(t *testing.T, url, token, body string, headers ...string) response {
	t.Helper()
	n := &testNode{t: t, url: url}
	h := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)
	return n.request(http.MethodPost, "/mcp", token, strings.NewReader(body), h...)
}

// toolCalls is a batch of n calls of tool with args, ids 1..n.
func toolCalls(t *testing.T, n int, tool string, args map[string]any) string {
	t.Helper()
	params, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	if err != nil {
		t.Fatal(err)
	}
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params)
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// batchAnswer is one answer of a batch.
type batchAnswer struct {
	ID     int `json:"id"`
	Result *struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		Meta              map[string]any  `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// code is the answer's error code ("" for none): a tool's refusal, or a
// JSON-RPC error's: the API's code in its data, else its number.
func (a batchAnswer) code() string {
	switch {
	case a.Error != nil:
		var body struct {
			Code string `json:"code"`
		}
		if json.Unmarshal(a.Error.Data, &body) == nil && body.Code != "" {
			return body.Code
		}
		return fmt.Sprint(a.Error.Code)
	case a.Result != nil && a.Result.IsError:
		var body struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(a.Result.StructuredContent, &body)
		return body.Code
	}
	return ""
}

func batchAnswers(t *testing.T, r response, want int) []batchAnswer {
	t.Helper()
	var answers []batchAnswer
	if err := json.Unmarshal(r.body, &answers); err != nil || r.status != http.StatusOK {
		t.Fatalf("batch answered %d %.2000s (%v)", r.status, r.body, err)
	}
	if len(answers) != want {
		t.Fatalf("%d answers to a batch of %d", len(answers), want)
	}
	return answers
}

// setTokenRate gives every token a bucket of limit a second holding burst,
// full now and refilled by a clock that stands still, so that what a test
// spends is all there is.
func setTokenRate(k *keyedLimiters, limit rate.Limit, burst int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.limit, k.burst = limit, burst
	now := time.Now()
	k.now = func() time.Time { return now }
	k.lru.Init()
	clear(k.byKey)
	k.size.Store(0)
}

// TestMCPBatchOverBound: a batch of more calls than the bound is refused
// whole, in the API's error shape, and none of its calls runs.
func TestMCPBatchOverBound(t *testing.T) {
	w := newMissionWorld(t)
	pub := w.tokens["pub"]
	headers := mcpOldSession(t, w.url, pub)
	tip := w.log.Tip().Seq
	r := mcpRawPost(t, w.url, pub, toolCalls(t, maxMCPBatch+1, "publish_mission", missionBody(nil)), headers...)
	r.wantError(t, http.StatusRequestEntityTooLarge, codeBatchTooLarge, "")
	if got := w.log.Tip().Seq; got != tip {
		t.Errorf("a refused batch appended %d events", got-tip)
	}
	// At the bound, the batch runs.
	batchAnswers(t, mcpRawPost(t, w.url, pub, toolCalls(t, 3, "publish_mission", missionBody(nil)), headers...), 3)
	if got := w.log.Tip().Seq; got != tip+3 {
		t.Errorf("a batch of 3 publish_mission appended %d events", got-tip)
	}
}

// TestMCPBatchRateLimit: each message of a batch counts against its token's
// rate limit as a request of its own would. A batch the bucket cannot cover
// is refused whole with 429 and Retry-After, and a batch larger than the
// token's burst, which no wait would let through, as too large.
func TestMCPBatchRateLimit(t *testing.T) {
	w := newMissionWorld(t)
	pub := w.tokens["pub"]
	setTokenRate(w.srv.tokenLimits, 5, 10)
	headers := mcpOldSession(t, w.url, pub) // 2 of 10 spent
	tip := w.log.Tip().Seq

	r := mcpRawPost(t, w.url, pub, toolCalls(t, 10, "publish_mission", missionBody(nil)), headers...)
	r.wantError(t, http.StatusTooManyRequests, codeRateLimited, "")
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	r = mcpRawPost(t, w.url, pub, toolCalls(t, 500, "publish_mission", missionBody(nil)), headers...)
	r.wantError(t, http.StatusRequestEntityTooLarge, codeBatchTooLarge, "")
	if got := w.log.Tip().Seq; got != tip {
		t.Fatalf("refused batches appended %d events", got-tip)
	}

	// 6 of 10 are left: a batch of 6 runs whole, and the bucket is empty.
	for _, a := range batchAnswers(t, mcpRawPost(t, w.url, pub, toolCalls(t, 6, "publish_mission", missionBody(nil)), headers...), 6) {
		if a.code() != "" {
			t.Errorf("call %d refused: %s", a.ID, a.code())
		}
	}
	mcpRawPost(t, w.url, pub, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers...).
		wantError(t, http.StatusTooManyRequests, codeRateLimited, "")
	if got := w.log.Tip().Seq; got-tip > 10 {
		t.Errorf("%d events appended by one token with a burst of 10", got-tip)
	} else if got != tip+6 {
		t.Errorf("the batch of 6 appended %d events", got-tip)
	}
}

// TestMCPBatchResponseBudget: the answers of a batch share one page budget.
// A page is cut to what is left of it, and a call that finds it spent is
// refused without running.
func TestMCPBatchResponseBudget(t *testing.T) {
	const budget = 2000
	var mu sync.Mutex
	read := map[context.Context]bool{} // the calls that read the store
	n := newTestNodeWith(t, func(o *Options) { o.PageBytes = budget }, func(s *Server) {
		s.eventsProgress = func(ctx context.Context, _ uint64) {
			mu.Lock()
			read[ctx] = true
			mu.Unlock()
		}
	})
	evs := n.appendEvents(strings.Split(strings.Repeat("test.x ", 40), " ")[:40]...)
	largest := 0
	for _, e := range evs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(b))
	}
	headers := mcpOldSession(t, n.url, testToken)
	const calls = 10
	answers := batchAnswers(t, mcpRawPost(t, n.url, testToken, toolCalls(t, calls, "query_events", map[string]any{"limit": 1000}), headers...), calls)
	total, spent := 0, 0
	for _, a := range answers {
		switch a.code() {
		case "":
			total += len(a.Result.StructuredContent)
		case codeBatchBudgetSpent:
			spent++
		default:
			t.Errorf("call %d: %s", a.ID, a.code())
		}
	}
	if total > budget+largest {
		t.Errorf("the batch's answers hold %d bytes, over the budget of %d plus one event (%d)", total, budget, largest)
	}
	if spent == 0 {
		t.Error("no call was refused for the spent budget")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(read) != calls-spent {
		t.Errorf("%d calls read the store, %d answered", len(read), calls-spent)
	}
}

// TestMCPBatchOneDeadline: the calls of a batch run under one deadline, the
// handler time from the batch's arrival. A call still running at it ends,
// and the calls after it are refused with timeout without running.
func TestMCPBatchOneDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	var mu sync.Mutex
	deadlines := map[context.Context]time.Time{} // of the calls that read the store
	block := true                                // the first call to read waits for its end
	n := newTestNodeWith(t, func(o *Options) { o.HandlerTimeout = timeout }, func(s *Server) {
		s.eventsProgress = func(ctx context.Context, _ uint64) {
			d, _ := ctx.Deadline()
			mu.Lock()
			_, seen := deadlines[ctx]
			deadlines[ctx] = d
			wait := !seen && block
			block = false
			mu.Unlock()
			if wait {
				<-ctx.Done()
			}
		}
	})
	n.appendEvents("test.one", "test.two")
	headers := mcpOldSession(t, n.url, testToken)
	answers := batchAnswers(t, mcpRawPost(t, n.url, testToken, toolCalls(t, 4, "query_events", nil), headers...), 4)
	after := time.Now()
	for _, a := range answers {
		if a.code() != codeTimeout {
			t.Errorf("call %d answered %q, want timeout", a.ID, a.code())
		}
	}
	mu.Lock()
	if len(deadlines) != 1 {
		t.Errorf("%d calls read the store; only the first should have run", len(deadlines))
	}
	for _, d := range deadlines {
		if d.IsZero() || d.After(after.Add(timeout)) {
			t.Errorf("a call's deadline %v is not within the handler time of the batch", d)
		}
	}
	// Calls that finish in time share the one deadline too.
	clear(deadlines)
	mu.Unlock()
	for _, a := range batchAnswers(t, mcpRawPost(t, n.url, testToken, toolCalls(t, 4, "query_events", nil), headers...), 4) {
		if a.code() != "" {
			t.Errorf("call %d: %s", a.ID, a.code())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deadlines) != 4 {
		t.Fatalf("%d of 4 calls read the store", len(deadlines))
	}
	var one time.Time
	for _, d := range deadlines {
		if one.IsZero() {
			one = d
		}
		if !d.Equal(one) {
			t.Errorf("the calls of one batch have deadlines %v and %v", one, d)
		}
	}
}

// TestMCPBatchClientGone: when the client of a batch goes away, the call
// running is canceled and no further call runs: the publish_mission calls
// after it append nothing.
func TestMCPBatchClientGone(t *testing.T) {
	w := newMissionWorld(t)
	pub := w.tokens["pub"]
	entered := make(chan struct{})
	ended := make(chan error, 1)
	var once sync.Once
	w.srv.eventsProgress = func(ctx context.Context, _ uint64) {
		once.Do(func() {
			close(entered)
			<-ctx.Done()
			ended <- ctx.Err()
		})
	}
	// A server of its own, to know when the batch's handler has returned.
	returned := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.srv.ServeHTTP(rw, r)
		if r.Header.Get("X-Test-Batch") != "" {
			close(returned)
		}
	}))
	t.Cleanup(hs.Close)
	headers := mcpOldSession(t, hs.URL, pub)
	tip := w.log.Tip().Seq

	query := `{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"query_events","arguments":{}}}`
	batch := "[" + query + "," + strings.TrimPrefix(toolCalls(t, 4, "publish_mission", missionBody(nil)), "[")
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/mcp", strings.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + pub, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "X-Test-Batch": "1"} {
		req.Header.Set(k, v)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	sent := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		sent <- err
	}()
	<-entered
	cancel() // the client goes away while the first call runs
	<-sent
	if err := <-ended; err != context.Canceled {
		t.Errorf("the running call ended with %v, want canceled when its client went away", err)
	}
	<-returned
	if got := w.log.Tip().Seq; got != tip {
		t.Errorf("%d events appended after the client went away", got-tip)
	}
}
