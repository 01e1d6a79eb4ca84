package http

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/internal/loglevel"
)

// POST /mcp serves the control API as MCP tools (docs/mcp.md) through the
// official Go SDK's Streamable HTTP transport, in its stateless mode with JSON
// responses: every POST is one JSON-RPC exchange answered by one
// application/json body, with no session to keep and no GET stream (GET and
// DELETE are 405 like any method a route does not serve).
//
// The route goes through s.handle like every other: requireAuth answers 401
// without a valid bearer token and puts the token's actor in the request's
// context. The route admits observers (routeObserver) because query_events
// is theirs too; each tool then admits the token's kind exactly as its HTTP
// route does, through admitKind with that route's flags (toolSpec.flags).
//
// The actor reaches a tool through the SDK's own channel for request
// credentials: auth.RequireBearerToken stores an auth.TokenInfo in the request
// context, and the transport hands it to every handler as
// RequestExtra.TokenInfo. Its verifier here does not look the token up again;
// it returns the actor requireAuth has already resolved (mcpTokenInfo).
//
// The route is streaming (no buffered handler time-out), because an
// invoke_servicenet_agent_sync call may wait for its task longer than any
// route: each tool call bounds itself instead (mcp_tools.go), and the
// response is written under a deadline that covers the longest call. A
// JSON-RPC batch (protocol 2025-03-26) never reaches the SDK as one: it is
// bounded, charged to the rate limit per message, and run one message at a
// time under one deadline and one byte budget (mcp_batch.go).

// mcpServerVersion is what initialize reports as the server's version: the
// version of the API whose routes the tools mirror.
const mcpServerVersion = "v1"

// mcpInstructions is initialize's instructions for the client.
const mcpInstructions = "civnode's control API as tools. Each tool runs what its HTTP route runs, " +
	"with the route's authorization, and returns the route's JSON body as structuredContent and as text; " +
	"a refused call has isError set and the route's error body {error, code, field}."

// mcpRoutes registers POST /mcp.
func (s *Server) mcpRoutes() {
	logger := slog.New(loglevel.Floor(s.logger.Handler(), slog.LevelWarn)).With(logkey.API, "mcp")
	srv := mcp.NewServer(&mcp.Implementation{Name: "civnode", Title: "civnode control API", Version: mcpServerVersion},
		&mcp.ServerOptions{
			Instructions: mcpInstructions,
			Logger:       logger,
			// Tools only: no logging capability, and no list_changed since a
			// stateless server has no stream to send it on.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	if s.servicenet == nil {
		srv.AddReceivingMiddleware(s.registryToolsOff)
	}
	s.mcpLimits = make(map[string]time.Duration)
	for _, t := range s.mcpTools() {
		if t.err != nil {
			s.logger.Error("mcp tool not offered", logkey.Tool, t.name, logkey.Err, t.err)
			continue
		}
		srv.AddTool(t.tool, t.handler)
		s.mcpLimits[t.tool.Name] = t.limit
	}
	transport := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              logger,
		MaxRequestBodyBytes: s.bodyLimit,
		// With the 2026-07-28 protocol a call ends when its POST does: a
		// client that hangs up cancels its tool. Older protocols are bounded
		// by the tools' own time-outs.
		PropagateRequestCancellation: true,
		// mcpHostRefusal guards against DNS rebinding as the SDK would, and
		// knows the public URL.
		DisableLocalhostProtection: true,
	})
	s.mcp = auth.RequireBearerToken(mcpTokenInfo, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(transport)
	s.handle(http.MethodPost, "/mcp", s.handleMCP, routeObserver|routeStreaming)
}

// handleMCP hands an authenticated request to the SDK's transport. The few
// answers the transport writes as plain text (a request that is not MCP: bad
// Content-Type or Accept, malformed JSON-RPC, a body over the limit) become
// the JSON error shape of every other route.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	// ErrNotSupported (a recorder in tests) has no connection to bound.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.mcpCallLimit() + s.writeTimeout))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err := s.mcpHostRefusal(r); err != nil {
		return err
	}
	mw := &mcpResponseWriter{ResponseWriter: w}
	if err := s.serveMCP(mw, r); err != nil {
		return err
	}
	return mw.transportError(s.bodyLimit)
}

// registryToolsOff answers a call of a servicenet tool on a node without a
// registry as the tool's route does, 503 registry_not_configured, rather
// than with the SDK's "unknown tool", which would not say why. The tools are
// not listed, so only a client that knows them from another node calls them.
func (s *Server) registryToolsOff(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || !slices.Contains(servicenetTools, call.Params.Name) {
			return next(ctx, method, req)
		}
		err := error(errRegistryNotConfigured)
		if a, ok := toolActor(call); ok {
			if kindErr := admitKind(a, routeRegistry); kindErr != nil {
				err = kindErr
			}
		}
		return s.toolError(ctx, call.Params.Name, err), nil
	}
}

// mcpCallLimit is the longest a tool call may run: a registry call under its
// route's time-out plus the longest wait of invoke_servicenet_agent_sync.
func (s *Server) mcpCallLimit() time.Duration {
	return s.registryTimeout + maxInvokeWait // registryTimeout ≥ handlerTimeout
}

// mcpActorKey is the member of auth.TokenInfo.Extra that holds the actor.
const mcpActorKey = "civnode.actor"

// mcpTokenInfo is the auth.TokenVerifier of POST /mcp. requireAuth has
// checked the token and resolved its actor; this only hands the actor on.
// The token has no expiry (RequireBearerTokenOptions.AllowMissingExpiration).
func mcpTokenInfo(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	a, ok := authenticatedActor(r.Context())
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: auditActor(a), Extra: map[string]any{mcpActorKey: a}}, nil
}

// toolActor is the actor of the request a tool call came in.
func toolActor(req *mcp.CallToolRequest) (commands.Actor, bool) {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return commands.Actor{}, false
	}
	a, ok := req.Extra.TokenInfo.Extra[mcpActorKey].(commands.Actor)
	return a, ok
}

// maxTransportText bounds how much of a transport's plain-text error is kept.
const maxTransportText = 1 << 10

// mcpResponseWriter passes the transport's answers through, except an error
// written as plain text (http.Error), which it holds back for transportError.
// JSON-RPC errors are JSON and pass.
type mcpResponseWriter struct {
	http.ResponseWriter
	status int // of a held-back plain-text error; 0: none
	text   []byte
}

func (w *mcpResponseWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *mcpResponseWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		if room := maxTransportText - len(w.text); room > 0 {
			w.text = append(w.text, p[:min(len(p), room)]...)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *mcpResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// transportError is the error for a held-back plain-text answer, nil if
// there was none. Server faults keep their detail for the log.
func (w *mcpResponseWriter) transportError(bodyLimit int64) error {
	if w.status == 0 {
		return nil
	}
	msg := strings.TrimSpace(string(w.text))
	switch w.status {
	case http.StatusUnauthorized:
		return errUnauthorized
	case http.StatusRequestEntityTooLarge:
		return bodyTooLarge(bodyLimit)
	case http.StatusForbidden: // a Host header that is not loopback on a loopback address
		return &Error{Status: w.status, Code: codeForbidden, Message: msg}
	case http.StatusNotFound:
		return &Error{Status: w.status, Code: codeNotFound, Message: msg}
	case http.StatusMethodNotAllowed:
		return &Error{Status: w.status, Code: codeMethodNotAllowed, Message: msg}
	case http.StatusUnsupportedMediaType:
		return &Error{Status: w.status, Code: codeUnsupportedMediaType, Field: "Content-Type", Message: msg}
	}
	if w.status >= 500 {
		return fmt.Errorf("mcp transport: %d %s", w.status, msg)
	}
	return &Error{Status: w.status, Code: codeBadRequest, Message: msg}
}
