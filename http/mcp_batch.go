package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC batches on POST /mcp (docs/limits.md, docs/mcp.md).
//
// MCP 2025-03-26 lets a client send a JSON array of messages in one POST;
// 2025-06-18 removed it, and the SDK refuses a batch from a client that
// declares a later version. Left to the SDK, a batch from a 2025-03-26 client
// runs every call at once, each under a time-out of its own that starts when
// it does, with no tie to the HTTP request (the SDK cancels a handler when
// its client goes only for the 2026-07-28 protocol), and the answers are
// gathered into one body with no bound: one request of 50 full pages was a
// 341 MB answer. A batch is also one request to the rate limit.
//
// So the node does not hand the SDK a batch. It reads the body once, and a
// batch is run here as the requests it is made of, one after another in the
// order sent, each through the SDK as a POST of its own, and the answers are
// put together into the batch's answer. Before anything runs:
//
//   - a batch of more than maxMCPBatch messages, or more than the token's
//     rate burst (which no wait would let through), is refused whole with
//     413 batch_too_large;
//   - each message after the first takes one more request from the token's
//     bucket (limitRate has taken the first), all at once: a batch the bucket
//     cannot cover is refused whole with 429 rate_limited and Retry-After, so
//     a batch costs what its messages would sent one per POST.
//
// While it runs, the batch has one deadline, the longest one of its calls
// would have alone (the handler time, or a registry tool's), counted from its
// arrival, and its answers one byte budget, the page budget: a list's page is
// cut to what is left of it, and once the answers written reach it, every
// later request is answered with a JSON-RPC error (data: batch_budget_spent)
// without being run. When the client goes away, the call running is canceled
// and no further one runs.

// maxMCPBatch is the most messages one JSON-RPC batch may hold: a client
// that needs more sends more requests, each under the rate limit.
const maxMCPBatch = 100

// rpcCodeBatchBudget is the JSON-RPC error code of a request of a batch left
// unrun because the batch's answers have used its byte budget: a server
// error of the implementation-defined range (-32000 to -32099).
const rpcCodeBatchBudget = -32000

// mcpExchange is what the tool calls of one POST /mcp learn of their request,
// through their context (the SDK passes the request context's values to its
// handlers, but not its end): when the client goes away and, for a batch, the
// batch's deadline and what is left of its byte budget.
type mcpExchange struct {
	req      context.Context // the HTTP request's: done when its client goes away
	deadline time.Time       // a batch's; zero for a single message
	left     atomic.Int64    // a batch's byte budget still unspent
	held     atomic.Int64    // bytes of the node's response budget it holds
}

type mcpExchangeKey struct{}

// exchangeOf is the exchange a tool call runs in; nil outside POST /mcp.
func exchangeOf(ctx context.Context) *mcpExchange {
	x, _ := ctx.Value(mcpExchangeKey{}).(*mcpExchange)
	return x
}

// bind makes ctx end with the exchange: at the batch's deadline (as a
// deadline, so the call answers timeout) and when the client goes away.
func (x *mcpExchange) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if x == nil {
		return ctx, func() {}
	}
	cancelDeadline := context.CancelFunc(func() {})
	if !x.deadline.IsZero() {
		ctx, cancelDeadline = context.WithDeadline(ctx, x.deadline)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(x.req, func() { cancel(context.Cause(x.req)) })
	return ctx, func() {
		stop()
		cancel(nil)
		cancelDeadline()
	}
}

// reservePage takes one page's worth of the node's response budget
// (responsebudget.go) for the exchange ctx runs in, once: a list tool's page
// is held in memory until the SDK has written it, as a list route's is. One
// page covers a whole batch, whose answers share one page budget. Like a list
// route, a call the budget cannot admit within budgetWait is refused with
// busy before it takes a list slot or reads anything; the bytes go back when
// the POST has been answered (serveMCP).
func (s *Server) reservePage(ctx context.Context) error {
	x := exchangeOf(ctx)
	if x == nil || s.budget == nil || x.held.Load() > 0 {
		return nil
	}
	n := s.pageReservation()
	wait, cancel := context.WithTimeout(ctx, s.budgetWait)
	defer cancel()
	if err := s.budget.acquire(wait, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.budget.refused.Add(1)
		return errBusy
	}
	x.held.Store(n)
	return nil
}

// pageBudget is the byte budget of a list page built under ctx: the page
// budget, or in a batch what is left of the batch's (positive: a request
// runs only while some is left).
func (s *Server) pageBudget(ctx context.Context) int {
	x := exchangeOf(ctx)
	if x == nil || x.deadline.IsZero() {
		return s.pageBytes
	}
	return int(max(1, min(int64(s.pageBytes), x.left.Load())))
}

// serveMCP hands one POST /mcp to the SDK's transport, or runs it here as a
// batch. mw is the transport's writer (mcpResponseWriter).
func (s *Server) serveMCP(mw *mcpResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(mw, r.Body, s.bodyLimit))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return bodyTooLarge(s.bodyLimit)
		}
		return &Error{Status: http.StatusBadRequest, Code: codeBadRequest, Message: "the request body could not be read"}
	}
	x := &mcpExchange{req: r.Context()}
	defer func() { s.budget.release(x.held.Swap(0)) }()
	msgs, isBatch := batchMessages(body)
	if !isBatch || batchRefusedBySDK(r) {
		// One message, or a batch the SDK refuses for its protocol version.
		r = r.WithContext(context.WithValue(r.Context(), mcpExchangeKey{}, x))
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mcp.ServeHTTP(mw, r)
		return nil
	}
	decoded := make([]jsonrpc.Message, len(msgs))
	for i, m := range msgs {
		if decoded[i], err = jsonrpc.DecodeMessage(m); err != nil {
			// As the SDK answers a batch with a malformed member: nothing runs.
			return &Error{Status: http.StatusBadRequest, Code: codeBadRequest,
				Message: fmt.Sprintf("malformed payload: batch member %d: %v", i, err)}
		}
	}
	if err := s.admitBatch(r, len(msgs)); err != nil {
		return err
	}
	limit := s.handlerTimeout
	for _, m := range decoded {
		limit = max(limit, s.mcpCallTime(m))
	}
	x.deadline = time.Now().Add(limit)
	x.left.Store(int64(s.pageBytes))
	return s.runBatch(mw, r, x, msgs, decoded)
}

// batchMessages splits a body that is a JSON array into its members; isBatch
// is false for anything else, which the SDK reads (or refuses) itself.
func batchMessages(body []byte) (msgs []json.RawMessage, isBatch bool) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return nil, false
	}
	if err := json.Unmarshal(body, &msgs); err != nil || len(msgs) == 0 {
		return nil, false // the SDK answers malformed JSON and an empty batch
	}
	return msgs, true
}

// batchRefusedBySDK reports whether the request declares a protocol version
// without batches (2025-06-18 and later), which the SDK refuses with 400.
func batchRefusedBySDK(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v != "" && v >= "2025-06-18"
}

// admitBatch refuses a batch of n messages larger than its token may send,
// and charges the token's bucket for the messages after the first.
func (s *Server) admitBatch(r *http.Request, n int) error {
	bound := maxMCPBatch
	if s.tokenLimits != nil {
		bound = min(bound, s.tokenLimits.burst)
	}
	if n > bound {
		return batchTooLarge(n, bound)
	}
	if s.tokenLimits == nil || n == 1 {
		return nil
	}
	a, _ := authenticatedActor(r.Context())
	wait, first := s.tokenLimits.takeN(a.TokenID, n-1)
	if wait == 0 {
		return nil
	}
	if first {
		s.logger.LogAttrs(r.Context(), slog.LevelWarn, "token over its rate limit; refusing its requests with 429",
			slog.String(logkey.TokenID, a.TokenID), slog.Float64(logkey.PerS, float64(s.tokenLimits.limit)),
			slog.Int(logkey.Burst, s.tokenLimits.burst))
	}
	// The retry's own request takes one more at limitRate.
	wait += seconds(1 / float64(s.tokenLimits.limit))
	return rateLimited(wait, fmt.Sprintf(
		"this batch of %d messages is more than this token's rate limit lets through now (requests a second: %g, at once: %d; "+
			"each message of a batch counts as a request); retry after Retry-After seconds, or send fewer at once",
		n, float64(s.tokenLimits.limit), s.tokenLimits.burst))
}

// mcpCallTime is how long m may run alone: a tool's own limit for a
// tools/call, the handler time for anything else.
func (s *Server) mcpCallTime(m jsonrpc.Message) time.Duration {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" {
		return s.handlerTimeout
	}
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return s.handlerTimeout
	}
	if d, ok := s.mcpLimits[p.Name]; ok {
		return d
	}
	return s.handlerTimeout
}

// runBatch runs a batch's messages in order, each through the SDK as a POST
// of its own, and answers their answers as one JSON array (202 with no body
// when none is a request, as the SDK answers notifications).
func (s *Server) runBatch(mw *mcpResponseWriter, r *http.Request, x *mcpExchange, msgs []json.RawMessage, decoded []jsonrpc.Message) error {
	ctx := context.WithValue(r.Context(), mcpExchangeKey{}, x)
	var answers [][]byte
	for i, m := range msgs {
		if r.Context().Err() != nil {
			return nil // the client has gone: nobody reads the rest
		}
		req, isCall := decoded[i].(*jsonrpc.Request)
		isCall = isCall && req.IsCall()
		if isCall && x.left.Load() <= 0 {
			answer, err := budgetSpent(req.ID, s.pageBytes)
			if err != nil {
				return err
			}
			answers = append(answers, answer)
			continue
		}
		rec := &batchRecorder{header: make(http.Header)}
		sub := r.Clone(ctx)
		sub.Body = io.NopCloser(bytes.NewReader(m))
		sub.ContentLength = int64(len(m))
		s.mcp.ServeHTTP(rec, sub)
		answer := bytes.TrimSpace(rec.body.Bytes())
		if rec.status >= 400 && !strings.HasPrefix(rec.header.Get("Content-Type"), "application/json") {
			if i == 0 || rec.status != http.StatusBadRequest {
				// A refusal of the request itself (its headers), which the
				// first member meets first, or of the first member before
				// anything ran (the SDK refuses a whole batch for one bad
				// member): the whole answer, in the API's error shape.
				return transportAnswer(mw, rec)
			}
			var err error
			if answer, err = rpcError(req, jsonrpc.CodeInvalidRequest, string(bytes.TrimSpace(rec.body.Bytes()))); err != nil {
				return err
			}
		}
		if len(answer) > 0 {
			answers = append(answers, answer)
			x.left.Add(-int64(len(answer)))
		}
	}
	if len(answers) == 0 {
		mw.WriteHeader(http.StatusAccepted)
		return nil
	}
	h := mw.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, no-transform")
	mw.WriteHeader(http.StatusOK)
	_, err := mw.Write(append(append([]byte("["), bytes.Join(answers, []byte(","))...), ']'))
	if err != nil {
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "mcp batch answer not delivered", slog.String(logkey.Err, err.Error()))
	}
	return nil
}

// transportAnswer passes a member's plain-text refusal on as the answer to
// the whole request, through mw, which turns it into the API's error shape.
func transportAnswer(mw *mcpResponseWriter, rec *batchRecorder) error {
	for k, v := range rec.header {
		mw.Header()[k] = v
	}
	mw.WriteHeader(rec.status)
	_, _ = mw.Write(rec.body.Bytes())
	return nil
}

// budgetSpent is the answer of a request left unrun for the batch's spent
// byte budget: a JSON-RPC error whose data is the API's error body.
func budgetSpent(id jsonrpc.ID, budget int) ([]byte, error) {
	_, body, _ := errorResponse(errBatchBudgetSpent(budget))
	data, err := marshalJSON(body)
	if err != nil {
		return nil, fmt.Errorf("encode a batch_budget_spent body: %w", err)
	}
	return rpcAnswer(id, &jsonrpc.Error{Code: rpcCodeBatchBudget, Message: body.Error, Data: json.RawMessage(bytes.TrimSpace(data))})
}

// rpcError is a JSON-RPC error answering req (nil: a member that is not a
// request, answered with a null id).
func rpcError(req *jsonrpc.Request, code int64, msg string) ([]byte, error) {
	var id jsonrpc.ID
	if req != nil {
		id = req.ID
	}
	return rpcAnswer(id, &jsonrpc.Error{Code: code, Message: msg})
}

// rpcAnswer encodes a JSON-RPC error response to id.
func rpcAnswer(id jsonrpc.ID, e *jsonrpc.Error) ([]byte, error) {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	if err != nil {
		return nil, fmt.Errorf("encode a JSON-RPC error: %w", err)
	}
	return b, nil
}

// batchRecorder keeps the SDK's answer to one member of a batch.
type batchRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *batchRecorder) Header() http.Header { return w.header }

func (w *batchRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *batchRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
