package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/ijson"
	"github.com/civnode/civnode/internal/logkey"
)

// Error is a failure the client can act on. Handlers return it (or wrap it); the
// server renders it through errorResponse.
type Error struct {
	Status  int    // HTTP status
	Code    string // stable snake_case code (docs/api.md)
	Message string // for humans; never holds a secret
	Field   string // the one input field at fault, if any
	// RetryAfter, when set, is sent as the Retry-After header in whole
	// seconds, at least 1 (429 and 503 answers that know when to come back).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// The error codes (docs/api.md, "Conventions") that this package produces, plus the availability codes that
// table leaves open.
const (
	codeInvalidJSON         = ijson.CodeInvalidJSON
	codeUnknownField        = ijson.CodeUnknownField
	codeInvalidField        = ijson.CodeInvalidField
	codeInvalidQuery        = "invalid_query"
	codeInvalidHeader       = "invalid_header"
	codeUnsupportedEncoding = "unsupported_content_encoding"
	codeUnauthorized        = "unauthorized"
	codeNotFound            = "not_found"
	codeMethodNotAllowed    = "method_not_allowed"
	codeBodyTooLarge        = "body_too_large"
	codeInternal            = "internal"
	codeUnavailable         = "unavailable"
	codeTimeout             = "timeout"
	codeCanceled            = "canceled"
	codeUpgradeRequired     = "upgrade_required"
	// Limits on how much a client may ask at once (ratelimit.go, connlimit.go,
	// stream.go; docs/limits.md).
	codeRateLimited        = "rate_limited"
	codeTooManyStreams     = "too_many_streams"
	codeTooManyConnections = "too_many_connections"
	codeBusy               = "busy" // the response budget (responsebudget.go)
	// A hash tile beyond the Merkle tree (transparency.go).
	codeTileNotFound = "tile_not_found"
	// No checkpoint has a quorum of cosignatures yet (transparency.go).
	codeNotWitnessed = "not_witnessed"
	// A write to a mirror, which serves another node's chain (readonly.go).
	codeReadOnlyMirror = "read_only_mirror"
	// A write while the fork guard holds the node's writes (eventlog.Behind).
	codeBehindPublished = "behind_published"
	// No state.committed signs the state tree yet (stateproof.go).
	codeStateNotCommitted = "state_not_committed"
	// The registry proxy of a node run without a registry (servicenet.go).
	codeRegistryNotConfigured = "registry_not_configured"
	// The MCP transport's own refusals (mcp.go).
	codeForbidden            = "forbidden"
	codeUnsupportedMediaType = "unsupported_media_type"
	// The bounds of a JSON-RPC batch on POST /mcp (mcp_batch.go).
	codeBatchTooLarge    = "batch_too_large"
	codeBatchBudgetSpent = "batch_budget_spent"
)

// Codes of the answers net/http writes itself, rewritten to JSON (protocol.go).
const (
	codeBadRequest      = "bad_request"
	codeHeadersTooLarge = "headers_too_large"
	codeNotImplemented  = "not_implemented"
)

// The constructors below are the only places a client error gets its status, so the
// status of every code can be read in this one file.

func invalidJSON(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: codeInvalidJSON, Message: fmt.Sprintf(format, args...)}
}

func invalidField(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: codeInvalidField, Field: field,
		Message: fmt.Sprintf(format, args...)}
}

// codecError is a body the I-JSON codec refused: invalid_json, unknown_field
// or invalid_field with the codec's field and message.
func codecError(e *ijson.Error) *Error {
	return &Error{Status: http.StatusBadRequest, Code: e.Code, Field: e.Field, Message: e.Message}
}

// invalidQuery is a query string that does not parse, a repeated parameter or a
// cursor the node did not hand out: the request as sent has no single meaning.
func invalidQuery(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: codeInvalidQuery, Field: param,
		Message: fmt.Sprintf(format, args...)}
}

// tileNotFound is a hash tile the tree has not grown to yet (docs/transparency.md).
func tileNotFound(path string, treeSize int64) *Error {
	return &Error{Status: http.StatusNotFound, Code: codeTileNotFound,
		Message: fmt.Sprintf("tile %s is beyond the tree, which has %d events", path, treeSize)}
}

// errNotWitnessed answers GET /v1/transparency/checkpoint?witnessed=1 while
// no checkpoint has a quorum of cosignatures; configured says whether the
// node has witnesses at all.
func errNotWitnessed(configured bool) *Error {
	msg := "no checkpoint of this node has a quorum of cosignatures yet; GET /v1/transparency shows each witness's status"
	if !configured {
		msg = "this node submits its checkpoints to no witness (serve --witness)"
	}
	return &Error{Status: http.StatusNotFound, Code: codeNotWitnessed, Message: msg}
}

// errStateNotCommitted answers GET /v1/state/proof while the node's state
// tree has no root a state.committed event signs in a checkpoint it can
// give, why says which: before its first commitment, while no witnessed
// checkpoint covers it yet, on a mirror, which keeps no tree. The node
// commits about once a second (serve --state-interval), hence Retry-After: 1.
func errStateNotCommitted(why string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: codeStateNotCommitted, RetryAfter: time.Second,
		Message: "the node has not committed to its state yet (" + why + "); retry after Retry-After seconds"}
}

// errRegistryNotConfigured answers the registry proxy's routes and tools on a
// node that runs without an agent registry: 503, since the same request
// succeeds on a node that has one, and no Retry-After, since waiting does
// not help.
var errRegistryNotConfigured = &Error{Status: http.StatusServiceUnavailable, Code: codeRegistryNotConfigured,
	Message: "this node runs without an agent registry (registry_not_configured): its operator started it with " +
		`--registry-url "", which turns the registry proxy off`}

func bodyTooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: codeBodyTooLarge,
		Message: fmt.Sprintf("request body is larger than %d bytes", limit)}
}

// batchTooLarge is a JSON-RPC batch of n messages, more than bound, the most
// the token may send in one (mcp_batch.go).
func batchTooLarge(n, bound int) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: codeBatchTooLarge,
		Message: fmt.Sprintf("the batch holds %d messages; this token may send at most %d in one request", n, bound)}
}

// errBatchBudgetSpent is a request of a batch left unrun because the batch's
// answers have reached its byte budget (mcp_batch.go). It is answered as a
// JSON-RPC error, whose data is this body; the status is never sent.
func errBatchBudgetSpent(budget int) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: codeBatchBudgetSpent,
		Message: fmt.Sprintf("the batch's answers have reached its budget of %d bytes; this request was not run: send it again in another request", budget)}
}

// rateLimited is a request over a rate limit, which may be sent again after
// wait (docs/api.md).
func rateLimited(wait time.Duration, msg string) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: codeRateLimited, Message: msg, RetryAfter: wait}
}

// tooManyStreams is a stream upgrade by a token that already has perToken open.
func tooManyStreams(perToken int) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: codeTooManyStreams, RetryAfter: time.Second,
		Message: fmt.Sprintf("this token already has %d streams open, the most it may; close one or use another token", perToken)}
}

// errTooManyConnections is the answer to a connection over the server's cap;
// connlimit.go writes it on the connection itself, before any request is read
// by net/http.
var errTooManyConnections = &Error{Status: http.StatusServiceUnavailable, Code: codeTooManyConnections, RetryAfter: time.Second,
	Message: "the node has as many connections open as it serves at once; retry shortly"}

var (
	errUnauthorized = &Error{Status: http.StatusUnauthorized, Code: codeUnauthorized,
		Message: "missing or invalid bearer token"}
	errTwoAuthorizations = &Error{Status: http.StatusBadRequest, Code: codeInvalidHeader, Field: "Authorization",
		Message: "the request has more than one Authorization header; send exactly one"}
	errContentEncoding = &Error{Status: http.StatusUnsupportedMediaType, Code: codeUnsupportedEncoding, Field: "Content-Encoding",
		Message: "request bodies are not decoded; send them without a Content-Encoding (or identity)"}
	errNotFound = &Error{Status: http.StatusNotFound, Code: codeNotFound,
		Message: "no such endpoint"}
	errMethodNotAllowed = &Error{Status: http.StatusMethodNotAllowed, Code: codeMethodNotAllowed,
		Message: "method not allowed on this endpoint; see the Allow header"}
	errUpgradeRequired = &Error{Status: http.StatusUpgradeRequired, Code: codeUpgradeRequired,
		Message: "this endpoint is a WebSocket: connect with Connection: Upgrade and Upgrade: websocket"}
	errStreamUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: codeUnavailable,
		Message: "the live stream is not running (the node is shutting down)"}
)

// commandStatus is the status of each kind of refused command (docs/api.md).
var commandStatus = map[commands.Kind]int{
	commands.KindInvalid:   http.StatusBadRequest,
	commands.KindForbidden: http.StatusForbidden,
	commands.KindNotFound:  http.StatusNotFound,
	commands.KindConflict:  http.StatusConflict,
	// The registry proxy's upstream failures (docs/api.md).
	commands.KindUpstream:        http.StatusBadGateway,
	commands.KindUpstreamTimeout: http.StatusGatewayTimeout,
	// A fault of the node's own that its operator must fix, which the
	// message says (wallet_unusable); logged at Error like any 500.
	commands.KindFault: http.StatusInternalServerError,
}

// errorBody is the JSON shape of every failure (docs/api.md).
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Field string `json:"field,omitempty"`
	// Details are further members some command errors carry
	// (commands.Error.Details): the pricing of settlement_required, the
	// violations of invalid_input. They never shadow the three above.
	Details map[string]any `json:"-"`
}

// MarshalJSON writes the three members, then the details in key order.
func (b errorBody) MarshalJSON() ([]byte, error) {
	type plain errorBody
	out, err := marshalJSON(plain(b))
	if err != nil || len(b.Details) == 0 {
		return out, err
	}
	out = bytes.TrimSuffix(bytes.TrimSpace(out), []byte("}"))
	for _, k := range slices.Sorted(maps.Keys(b.Details)) {
		if k == "error" || k == "code" || k == "field" {
			continue
		}
		v, err := marshalJSON(b.Details[k])
		if err != nil {
			return nil, err
		}
		name, _ := marshalJSON(k)
		out = append(append(append(append(out, ','), bytes.TrimSpace(name)...), ':'), bytes.TrimSpace(v)...)
	}
	return append(out, '}'), nil
}

// errorResponse is the one function that turns an error into an HTTP status and
// body. internal reports whether the failure is the node's own, which the caller
// must then log with err's detail: the client was given a generic message in
// place of err, or (commands.KindFault) a message that says what the operator
// must fix without the detail.
func errorResponse(err error) (status int, body errorBody, internal bool) {
	status, body, internal = errorStatus(err)
	// The one place every answered error passes: what it repeats of a
	// client's value is bounded here (commands.CapText, docs/limits.md).
	body.Error = commands.CapText(body.Error)
	return status, body, internal
}

// errorStatus is errorResponse before the text is bounded.
func errorStatus(err error) (status int, body errorBody, internal bool) {
	var e *Error
	var ce *commands.Error
	switch {
	case errors.As(err, &e) && e.Status >= 400 && e.Status <= 599:
		// A 5xx that says when to come back is the node shedding load, not a
		// fault to log at Error (one line per refused reader).
		return e.Status, errorBody{Error: e.Message, Code: e.Code, Field: e.Field}, e.Status >= 500 && e.RetryAfter == 0
	case errors.As(err, &ce) && commandStatus[ce.Kind] != 0:
		status := commandStatus[ce.Kind]
		return status, errorBody{Error: ce.Message, Code: ce.Code, Field: ce.Field, Details: ce.Details}, ce.Kind == commands.KindFault
	case errors.Is(err, eventlog.ErrBehindPublished):
		return http.StatusServiceUnavailable, behindBody(err), false
	case errors.Is(err, eventlog.ErrReadOnly):
		return errReadOnlyMirror.Status, errorBody{Error: errReadOnlyMirror.Message, Code: errReadOnlyMirror.Code}, false
	case errors.Is(err, eventlog.ErrFailed), errors.Is(err, eventlog.ErrClosed):
		// Fail-stop: the log refuses writes until an operator restarts the node, and
		// health says so too.
		return http.StatusServiceUnavailable,
			errorBody{Error: "the node cannot accept writes", Code: codeUnavailable}, true
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable,
			errorBody{Error: "the request took too long", Code: codeTimeout}, false
	case errors.Is(err, context.Canceled):
		// The client has gone; the body is for the log line, nobody reads it.
		return http.StatusServiceUnavailable,
			errorBody{Error: "the request was canceled", Code: codeCanceled}, false
	default:
		return http.StatusInternalServerError,
			errorBody{Error: "internal error", Code: codeInternal}, true
	}
}

// behindBody is the answer to a write the fork guard holds: what was seen
// where, and how far behind it the chain is.
func behindBody(err error) errorBody {
	body := errorBody{Error: err.Error(), Code: codeBehindPublished}
	var b *eventlog.Behind
	if errors.As(err, &b) {
		body.Error = b.Message()
		body.Details = map[string]any{"reason": b.Reason, "seen": b.Seen, "seen_tree_size": b.Size, "tree_size": b.Tip}
	}
	return body
}

// writeError renders err and logs it: server faults at Error with the detail the
// client does not see, client faults at Debug.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body, internal := errorResponse(err)
	if e := (*Error)(nil); errors.As(err, &e) && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
	}
	if internal {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String(logkey.Method, r.Method), slog.String(logkey.Path, r.URL.Path),
			slog.Int(logkey.Status, status), slog.String(logkey.Err, err.Error()))
	} else {
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "request rejected",
			slog.String(logkey.Method, r.Method), slog.String(logkey.Path, r.URL.Path),
			slog.Int(logkey.Status, status), slog.String(logkey.Code, body.Code), slog.String(logkey.Field, body.Field))
	}
	b, mErr := marshalJSON(body)
	if mErr != nil { // cannot happen for three strings; keep the status regardless
		b = []byte(`{"error":"internal error","code":"internal"}` + "\n")
	}
	writeBody(w, status, b)
}

// errWriteTimeout is a message the client did not take within the write timeout.
var errWriteTimeout = errors.New("write timed out")
