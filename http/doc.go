// Package http serves civnode's control API (docs/api.md, http/openapi.json) over
// HTTP/JSON. It adapts the core packages to HTTP and owns nothing of their rules: it
// authenticates, parses and bounds requests, calls the core, and renders the result.
//
// [New] builds the [Server] from [Options] (the log, the read models, the
// commands, the stream, the [Tokens] service, the limits and their Default…
// values); [Server.Serve] serves a listener until its context ends, and a
// Server is an http.Handler too. [Error] is a failure the client can act on,
// as handlers return it. [NewMetrics] makes the node's Prometheus registry
// ([Metrics]), which Options carries and the log's and the registry
// client's hooks report into.
//
// # Responses
//
// Every response body is one JSON object with Content-Type application/json, and
// success is 200. A failure is {"error":"<message>","code":"<snake_case>","field":"<name>"},
// field present only when one input field is at fault. errorResponse in errors.go is
// the one place an error becomes a status and a body; errors it does not recognise
// are 500 "internal" with a generic message, and their details go only to the log.
// Unknown paths are 404 "not_found", a known path with the wrong method is 405
// "method_not_allowed" with an Allow header, OPTIONS on a known path is 204 with an
// Allow header and no body, and a panicking handler is 500.
// GET /v1/health is the exception: it always has one field, status, which is "ok"
// (200) or "unavailable" (503, when the event log no longer accepts writes).
//
// # Authentication
//
// Every route but GET /v1/health needs Authorization: Bearer <token>. The owner
// token (Options.OwnerToken) is compared as a SHA-256 digest in constant time, so
// neither content nor length leaks; agent and observer tokens are looked up by
// digest in the token service (Options.Tokens, see docs/tokens.md). A request that
// passes carries a commands.Actor in its context (requestActor), which names the
// token by id ("owner" or "tok_…") and is what audit entries record as actor
// "token:<id>". The route table decides by kind alone: routeOwner routes (audit,
// admin) refuse every other token with 403 "forbidden", and an observer token gets
// 403 everywhere but on routeObserver routes (the event log, its export and
// the stream) and health. Which identities an agent token may act for is for the commands to
// decide. A request that fails authentication gets 401 "unauthorized"; failures
// are recorded as audit action auth.failed with actor "anonymous" and detail
// {"path","remote"}, at most one per second with a burst of five so a flood of bad
// requests cannot flood the audit log. The presented token is never stored or
// logged.
//
// # Input
//
// Query parameters: limit is an integer 1..1000 (default 100); since is RFC 3339 with
// any offset and any number of fractional digits, converted to UTC, and selects
// entries strictly after it; type (events) and action (audit) match exactly, or by
// prefix when they end in ".*". An empty value is the same as an absent one, and
// unknown parameters are ignored. Since a literal "+" in a query string decodes to a
// space, a since whose offset sign arrived as a space is read as "+". A bad value is
// 400 "invalid_field" naming the parameter. The query string itself must parse
// whole on every route (checkQuery): a pair with a semicolon or a bad %-escape, a
// parameter given twice, and a cursor the node did not hand out are 400
// "invalid_query", because net/url would drop the pair and with it a filter.
//
// Every GET route answers HEAD. Two Authorization headers are 400
// "invalid_header"; a Content-Encoding other than identity is 415
// "unsupported_content_encoding". The answers net/http writes itself before any
// handler (400, 431, 501) are rewritten to the JSON error shape (protocol.go).
//
// Request bodies (decode.go) are limited to Options.BodyLimit (413 "body_too_large")
// and must be exactly one JSON value with no unknown fields (400 "unknown_field"),
// well formed and I-JSON, RFC 7493, anywhere (400 "invalid_json"; internal/ijson)
// and of the right types (400 "invalid_field" with the dotted path of the field).
//
// # Time limits
//
// Each non-streaming handler runs under Options.HandlerTimeout; when it runs out the
// client gets 503 "timeout" at once, whether or not the handler has noticed its
// context or is blocked reading a body the client declared but did not send (the
// read is ended and the connection closed after the answer), and the handler's
// loops over records stop at their next context check.
// Its response is buffered, bounded by the page byte budget (Options.PageBytes),
// and sent under a write deadline (responseWriteTimeout), so a client that does not
// read is dropped. The export is streamed, so it has no total limit; instead every
// write must make progress within exportWriteIdle. The server bounds header and
// body reads (ReadHeaderTimeout, ReadTimeout), idle connections and header size.
// Every bound is listed in docs/limits.md.
//
// # Rate and connection limits
//
// Each token has a token bucket (Options.RateLimit a second, Options.RateBurst
// at once; ratelimit.go) on the routes that cost the node most: every
// authenticated POST, the registry proxy's reads, GET /v1/events and its
// export (rateLimitedRoute is the one rule). It is checked after requireAuth
// and before the handler reads anything; a request over it is 429
// "rate_limited" with Retry-After in whole seconds, at least 1. Health, the node
// proof, the stream's upgrade and the other reads are not limited. Failed
// authentications have a bucket per client address (IPv6: per /64); an
// address that has spent it is answered 429 before its token is looked at.
// Buckets are kept per key, at most maxLimiterKeys of each kind, the least
// recently used dropped first.
//
// Serve caps the connections open at once (Options.MaxConns, connlimit.go),
// TCP and unix-socket ones counted apart; one over the cap is answered 503
// "too_many_connections" with Retry-After: 1 at once and closed, not left in
// the accept queue. A WebSocket stream holds its slot until it closes, and a
// token may hold at most Options.StreamsPerToken streams (429
// "too_many_streams").
//
// # Live stream
//
// With Options.Stream (the node's embedded NATS server) GET /v1/stream is a
// WebSocket (stream.go) on which each committed event is one text message, its
// stored JSON and "\n". It is refused, as JSON, before the upgrade: bad token
// (the header, or ?token= when there is none; the parameter is dropped from the
// request before anything reads it), bad filter, not a WebSocket (426). With
// since= or after_seq= the log is replayed, in pages, up to a tip read after
// the live subscription was taken, so replay and live meet with no gap and no
// duplicate. A client that falls a buffer behind is closed with 1008, one that
// takes nothing for the write timeout is cut off, and Serve's shutdown closes
// every client with 1001 and waits for them, since http.Server.Shutdown neither
// closes nor waits for hijacked connections. Each sealed export is also
// published as a stream.ExportNotice. GET /v1/client/network/status and the
// network object of GET /v1/state report the NATS server (network.go).
//
// # Registry proxy and MCP
//
// With Options.Servicenet the /v1/core/servicenet routes proxy the agent
// registry (servicenet.go; docs/servicenet.md). They wait on the registry, so
// they run under registryHandlerTimeout (routeRegistry), long enough for the
// registry client's own time-outs to answer 502/504 first. Without it (a node
// run with --registry-url "") they answer 503 registry_not_configured and MCP
// lists no servicenet tool (registryToolsOff answers a call of one). With
// Options.PaymentAccounts the owner manages payment accounts at
// /v1/admin/payment-accounts; no answer ever holds a key.
//
// POST /mcp (mcp.go, mcp_tools.go; docs/mcp.md) is the exception to "every
// body is one JSON object of ours": it speaks MCP's Streamable HTTP, JSON-RPC
// 2.0 through the official Go SDK in stateless mode with JSON responses, and a
// notification is answered 202 with no body. It authenticates like every
// route and then each tool admits exactly the token kinds of its HTTP route and
// calls the same commands and read models, so a tool's structuredContent is
// the route's body and a refused tool call carries the route's error body.
// The SDK's own transport errors are rewritten to the JSON error shape.
//
// # Logging
//
// Every request is logged once answered, at Info (the probes and the metrics
// scrape at Debug), with method, route pattern, status, duration, bytes, remote
// address and request id; the response carries the id in X-Request-Id
// (requestlog.go). Headers, paths and query strings are never logged: they carry
// bearer tokens (and, for the WebSocket stream, ?token=) or client-chosen text.
// GET /v1/ready is false once the log fails or a shutdown begins (ready.go).
//
// # Client
//
// Both ends of the owner's channel to a running node live here. [Client]
// ([NewClient]; client.go) is the CLI's client of the API as the node's
// owner, with [ClientTimeout] a call: it sends the
// owner token only over connections its caller's dial function checked, the
// control socket in the data dir or a TCP connection on which the node first
// proved, with [ProveNode], that it holds the node key (the server half is
// handleNodeProof; an answer is at most [ProofAnswerLimit] bytes). Call maps
// the node's refusals back onto *commands.Error; a backup's [Snapshot] is one
// of its answers. On the server side, [ControlSocketListener] names every
// connection of the control socket unix:control.sock, and [MergeListeners]
// lets one http.Server serve it beside the TCP listener ([MergedListener]).
package http
