package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/time/rate"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/witness"
)

// Options configures New. Every field but Log has a default.
type Options struct {
	Log            *eventlog.Log
	OwnerToken     string        // the control token; compared in constant time
	Governs        []string      // subnets this node governs (default ["genesis"]); the owner actor's Governs
	Tokens         Tokens        // agent and observer tokens and the admin endpoints; nil: only OwnerToken works
	Logger         *slog.Logger  // default slog.Default()
	BodyLimit      int64         // default 1 MiB → 413 body_too_large
	HandlerTimeout time.Duration // default 10s, for every non-streaming handler
	// PageBytes is the byte budget of one page of a list response (default
	// DefaultPageBytes): a page ends before the item that would take its body
	// over it, though never before its first item. See docs/limits.md.
	PageBytes int
	// ResponseBudget bounds the bytes of response bodies held in memory at
	// once, over all requests (responsebudget.go): a read over it waits up to
	// a second, then is answered 503 busy with Retry-After. Default
	// DefaultResponseBudgetPages × PageBytes; at least one page (PageBytes
	// and a chunk); negative: no budget. See docs/limits.md.
	ResponseBudget int64

	// RateLimit is each token's rate limit, in requests a second, on the
	// routes it covers (every authenticated POST, the registry proxy, GET
	// /v1/events and its export; ratelimit.go), and RateBurst the requests it
	// may make at once beyond it. Over it a request is refused with 429
	// rate_limited and Retry-After. Defaults DefaultRateLimit and twice the
	// limit; a negative RateLimit turns the limit off.
	RateLimit float64
	RateBurst int
	// MaxConns caps the connections open at once, over TCP and, counted
	// apart, over unix sockets (connlimit.go); one over it is answered 503
	// too_many_connections and closed. Default DefaultMaxConns; negative: no
	// cap. It applies in Serve.
	MaxConns int
	// MaxConnsPerAddr caps the TCP connections open at once from one client
	// address (an IPv4 address, an IPv6 /64; loopback too). Default
	// DefaultMaxConnsPerAddr; negative: no cap. AnonymousIdleTimeout is how
	// long a kept-alive TCP connection on which no request has carried a
	// valid token may wait for its next request (default
	// defaultAnonymousIdle, never more than the others' 2 min). Both apply in
	// Serve (connlimit.go).
	MaxConnsPerAddr      int
	AnonymousIdleTimeout time.Duration
	// StreamsPerToken caps the GET /v1/stream clients one token may have open
	// at once; one more is refused with 429 too_many_streams. Default
	// DefaultStreamsPerToken; negative: no cap.
	StreamsPerToken int
	// TrustedProxies are the reverse proxies (addresses and networks) whose
	// Forwarded or X-Forwarded-For the node reads for a request's client
	// address, which every per-address rule, audit entry and request log
	// uses (clientaddr.go); from any other peer both headers are ignored.
	// None: the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// PublicURL is the address clients use (ParsePublicURL), when it is not
	// the listen address: POST /mcp accepts its Host and Origin, and GET
	// /v1/openapi.json names it as the server (publicurl.go). "": none.
	PublicURL string

	// Identity runs the identity commands and signs the node's binding proof;
	// Identities is the identity read model (fed by OnCommit). Set both or
	// neither: without them the /v1/civilization and /v1/supervision endpoints
	// are not served and GET /v1/state shows no controller binding.
	Identity   *commands.Identity
	Identities *projections.Identities

	// Mission runs the mission commands; Missions is the missions read model
	// (fed by OnCommit). Set both or neither, and only with Identity and
	// Identities: without them the /v1/core/missions and
	// /v1/supervision/missions endpoints are not served and GET /v1/state shows
	// a zero balance.
	Mission  *commands.Mission
	Missions *projections.Missions

	// Catalog is the game catalog the node runs with (GET /v1/game/catalog);
	// default catalog.Default().
	Catalog *catalog.Catalog

	// Game runs the game's installs; GameState is the game read model (fed by
	// OnCommit). Set both or neither, and only with the missions and
	// identities: without them only GET /v1/game/catalog of the game endpoints
	// is served. Game must install from Catalog.
	Game      *commands.Game
	GameState *projections.Game

	// Stream is the node's embedded NATS server (package stream), whose
	// Publish must be the log's OnCommit hook. With it the server serves the
	// WebSocket GET /v1/stream and publishes a notice of every sealed export;
	// without it (nil) there is no /v1/stream and the network status says
	// NATS is not configured.
	Stream *stream.Server

	// Servicenet runs the agent registry proxy (docs/servicenet.md); nil: the node
	// runs without a registry, the /v1/core/servicenet endpoints answer 503
	// registry_not_configured, and the servicenet MCP tools are not listed
	// (a call of one answers the same error). PaymentAccounts are the
	// accounts it pays from, administered at /v1/admin/payment-accounts;
	// nil: those paths are not served.
	Servicenet      *commands.Servicenet
	PaymentAccounts *commands.PaymentAccounts

	// Snapshot, if set, copies the node's store to a new directory inside
	// its data directory, consistent at the tip it reports, for civnode
	// backup (POST /v1/admin/backup); nil: that path is not served.
	Snapshot func(context.Context) (Snapshot, error)

	// Mirror, on a mirror (serve --mirror-of), is its follower: GET
	// /v1/transparency shows how it follows and serves the origin's
	// witnessed checkpoint it holds, GET /v1/ready answers 503
	// mirror_stopped once it stopped on evidence (mirror.go).
	Mirror Mirror

	// Metrics is the registry GET /v1/metrics serves (prometheus.go); the
	// server adds its HTTP, tip and stream series to it. Give the same one to
	// the log's OnGroupCommit and the registry client's Observe to have their
	// series too. Default: a registry of the server's own.
	Metrics *Metrics

	// Witnesses, if set, submits the node's checkpoints to witnesses: GET
	// /v1/transparency lists them and serves the witnessed checkpoint.
	// Witness, if set, makes the node a witness of other logs: POST
	// /v1/witness/add-checkpoint and GET /v1/witness (docs/transparency.md).
	Witnesses *witness.Submitter
	Witness   *witness.Witness
	// ForkGuard, if set, says what the node's fork guard last learnt of
	// the checkpoints of its own key elsewhere, in GET /v1/transparency's
	// fork_guard.note (a witness it waited for in vain, say); the hold
	// itself is the log's (eventlog.Log.Held).
	ForkGuard func() string
}

// DefaultPageBytes is the default of Options.PageBytes: 4 MiB bounds the memory
// of one list response (times the concurrent requests) while a page of limit=1000
// typical events (a few hundred bytes each) stays whole.
const DefaultPageBytes = 4 << 20

// Defaults and the server's own limits; docs/limits.md lists them all. Reads are
// bounded so a slow client cannot hold a connection. Writes are bounded per
// response for timed routes (the client has responseWriteTimeout to take a
// response once it is ready) and per write for the export, which may run long.
const (
	defaultBodyLimit      = 1 << 20
	defaultHandlerTimeout = 10 * time.Second
	readHeaderTimeout     = 5 * time.Second
	readTimeout           = 30 * time.Second
	idleTimeout           = 2 * time.Minute
	maxHeaderBytes        = 64 << 10
	responseWriteTimeout  = 30 * time.Second
	exportWriteIdle       = 30 * time.Second
	shutdownGrace         = 10 * time.Second
	// registryHandlerTimeout bounds a registry proxy request: a card fetch and
	// an invoke with its paid retry, each within the registry client's own
	// read timeout (20 s by default, cmd/civnode).
	registryHandlerTimeout = 60 * time.Second
)

// Server is the control API. It is an http.Handler; Serve runs it on a listener.
type Server struct {
	log       *eventlog.Log
	witnesses *witness.Submitter // nil: no witnesses configured
	forkGuard func() string      // nil: none
	witness   *witness.Witness   // nil: the node witnesses no log
	// witnessLimits bounds each client address's add-checkpoint requests
	// (witness.go), which carry no token.
	witnessLimits  *keyedLimiters
	logger         *slog.Logger
	governs        []string
	bodyLimit      int64
	handlerTimeout time.Duration
	// registryTimeout bounds the registry proxy's handlers (routeRegistry).
	registryTimeout time.Duration
	pageBytes       int
	auth            *authenticator
	exportAudit     *exportAudit
	tokens          Tokens
	identity        *commands.Identity
	identities      *projections.Identities
	mission         *commands.Mission
	missions        *projections.Missions
	catalog         *catalog.Catalog
	game            *commands.Game
	gameState       *projections.Game
	streams         *streamHub // the WebSocket clients of GET /v1/stream (stream.go)
	servicenet      *commands.Servicenet
	payments        *commands.PaymentAccounts
	snapshot        func(context.Context) (Snapshot, error)
	mirror          Mirror       // nil: not a mirror
	mcp             http.Handler // POST /mcp (mcp.go)
	// mcpLimits is the longest a call of each MCP tool may run (mcp_batch.go).
	mcpLimits      map[string]time.Duration
	metrics        *Metrics
	metricsHandler http.Handler // GET /v1/metrics (prometheus.go)
	router         *httprouter.Router
	// routeTable lists every registered "METHOD /path", for tests that hold
	// the API's surface (the oracle has no route).
	routeTable []string
	handler    http.Handler

	// publicURL is Options.PublicURL; nil: none. openAPIDoc and openAPITag
	// are the OpenAPI document served and its ETag (publicurl.go).
	publicURL  *url.URL
	openAPIDoc []byte
	openAPITag string

	// tokenLimits is the rate limit of each token (ratelimit.go); nil: none.
	tokenLimits *keyedLimiters
	// authFails counts the failed authentications of each client address.
	authFails *keyedLimiters
	// limitedRoutes lists the "METHOD /path" of every route the rate limit
	// covers, for the test that holds the rule.
	limitedRoutes []string
	// maxConns caps the connections Serve serves at once; 0: no cap.
	// maxConnsPerAddr caps those of one client address; 0: no cap.
	maxConns, maxConnsPerAddr int
	// conns is the connection cap of the running Serve, for the tests that
	// must know when the node has noted a connection idle.
	conns atomic.Pointer[connLimitListener]

	// Server limits, fields so tests can shorten them.
	headerTimeout   time.Duration // readHeaderTimeout
	readTimeout     time.Duration
	idleTimeout     time.Duration
	anonIdleTimeout time.Duration // Options.AnonymousIdleTimeout
	shutdownGrace   time.Duration
	writeTimeout    time.Duration // responseWriteTimeout
	exportWriteIdle time.Duration
	// listSlots admits the list handlers that may build a page as large as the
	// byte budget, GOMAXPROCS-1 (at least 1) at a time (withListSlot).
	listSlots chan struct{}
	// budget bounds the response bytes held at once (responsebudget.go); nil:
	// none. budgetWait is the longest a read waits for it (tests shorten it).
	budget     *responseBudget
	budgetWait time.Duration

	// handlers counts the handler goroutines withTimeoutOf runs, which may outlive
	// their request once abandoned: Serve waits for them, so that the caller does
	// not close the log under a handler still reading it.
	handlers sync.WaitGroup
	// workers run the timed handlers on goroutines whose stacks have grown
	// (workers.go).
	workers *handlerWorkers
	// requestIDs makes the X-Request-Id of a request that brings none.
	requestIDs *requestIDs
	// stopping is set once Serve begins to shut down; GET /v1/ready says so.
	stopping atomic.Bool

	// exportProgress, if set, is called after each event an export writes (tests).
	exportProgress func(seq uint64)
	// eventsProgress, if set, is called with each event GET /v1/events reads
	// from the store, before it is written (tests).
	eventsProgress func(ctx context.Context, seq uint64)
	// responseSent, if set, is called once a timed handler's buffered response
	// has been copied to the client, with the write's error (tests).
	responseSent func(err error)
}

// New builds the server and its routes. It panics without a Log, which is a wiring
// mistake rather than a runtime condition.
func New(opts Options) *Server {
	if opts.Log == nil {
		panic("http.New: Options.Log is nil")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if len(opts.Governs) == 0 {
		opts.Governs = []string{"genesis"}
	}
	if opts.BodyLimit <= 0 {
		opts.BodyLimit = defaultBodyLimit
	}
	if opts.HandlerTimeout <= 0 {
		opts.HandlerTimeout = defaultHandlerTimeout
	}
	if opts.PageBytes <= 0 {
		opts.PageBytes = DefaultPageBytes
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = DefaultRateLimit
	}
	if opts.RateBurst <= 0 {
		opts.RateBurst = max(1, int(min(2*opts.RateLimit, math.MaxInt32)))
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxConnsPerAddr == 0 {
		opts.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if opts.AnonymousIdleTimeout <= 0 {
		opts.AnonymousIdleTimeout = defaultAnonymousIdle
	}
	if opts.StreamsPerToken == 0 {
		opts.StreamsPerToken = DefaultStreamsPerToken
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if (opts.Identity == nil) != (opts.Identities == nil) {
		panic("http.New: set both Options.Identity and Options.Identities, or neither")
	}
	if (opts.Mission == nil) != (opts.Missions == nil) || opts.Missions != nil && opts.Identities == nil {
		panic("http.New: set both Options.Mission and Options.Missions, or neither, and only with the identities")
	}
	if (opts.Game == nil) != (opts.GameState == nil) || opts.GameState != nil && opts.Missions == nil {
		panic("http.New: set both Options.Game and Options.GameState, or neither, and only with the missions")
	}
	logger := opts.Logger.With(logkey.Component, "http")
	if opts.OwnerToken == "" {
		logger.Warn("no owner token configured; every authenticated request will be refused")
	}
	s := &Server{
		log:             opts.Log,
		logger:          logger,
		governs:         slices.Clone(opts.Governs),
		bodyLimit:       opts.BodyLimit,
		handlerTimeout:  opts.HandlerTimeout,
		registryTimeout: max(opts.HandlerTimeout, registryHandlerTimeout),
		pageBytes:       opts.PageBytes,
		exportAudit:     newExportAudit(opts.Log, logger),
		auth:            newAuthenticator(opts.OwnerToken, opts.Governs, opts.Tokens, opts.Log, logger, rate.NewLimiter(authAuditRate, authAuditBurst)),
		tokens:          opts.Tokens,
		identity:        opts.Identity,
		identities:      opts.Identities,
		mission:         opts.Mission,
		missions:        opts.Missions,
		catalog:         opts.Catalog,
		game:            opts.Game,
		gameState:       opts.GameState,
		mirror:          opts.Mirror,
		streams:         newStreamHub(opts.Stream, max(0, opts.StreamsPerToken), logger),
		authFails:       newKeyedLimiters(authFailRate, authFailBurst, maxLimiterKeys),
		maxConns:        max(0, opts.MaxConns),
		maxConnsPerAddr: max(0, opts.MaxConnsPerAddr),
		anonIdleTimeout: opts.AnonymousIdleTimeout,
		servicenet:      opts.Servicenet,
		payments:        opts.PaymentAccounts,
		snapshot:        opts.Snapshot,
		metrics:         opts.Metrics,
		witnesses:       opts.Witnesses,
		forkGuard:       opts.ForkGuard,
		witness:         opts.Witness,
		headerTimeout:   readHeaderTimeout,
		readTimeout:     readTimeout,
		idleTimeout:     idleTimeout,
		shutdownGrace:   shutdownGrace,
		listSlots:       make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1)),
		writeTimeout:    responseWriteTimeout,
		exportWriteIdle: exportWriteIdle,
		budgetWait:      budgetWait,
		workers:         newHandlerWorkers(),
		requestIDs:      newRequestIDs(),
	}
	s.auth.proxies = newProxyTrust(opts.TrustedProxies)
	s.openAPIDoc, s.openAPITag = openAPIDocument, openAPIETag
	if opts.PublicURL != "" {
		if err := s.setPublicURL(opts.PublicURL); err != nil {
			logger.Error("public URL ignored", logkey.Err, err)
		}
	}
	if budget := opts.ResponseBudget; budget >= 0 {
		if budget == 0 {
			budget = DefaultResponseBudgetPages * int64(opts.PageBytes)
		}
		s.budget = newResponseBudget(max(budget, s.pageReservation()))
	}
	if opts.RateLimit > 0 && !math.IsInf(opts.RateLimit, 1) {
		s.tokenLimits = newKeyedLimiters(rate.Limit(opts.RateLimit), opts.RateBurst, maxLimiterKeys)
	}
	s.router = httprouter.New()
	// Redirects would answer a typo with HTML; an API answers 404 instead.
	s.router.RedirectTrailingSlash = false
	s.router.RedirectFixedPath = false
	s.router.HandleMethodNotAllowed = true
	s.router.HandleOPTIONS = true
	s.router.GlobalOPTIONS = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The router has set Allow; that is the whole answer.
		w.WriteHeader(http.StatusNoContent)
	})
	s.router.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errNotFound)
	})
	s.router.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errMethodNotAllowed)
	})
	s.router.PanicHandler = s.recoverPanic
	s.registerServer()
	s.routes()
	s.handler = s.logRequests(secureHeaders(s.admitConn(s.refuseContentEncoding(s.router))))
	return s
}

// routes is the table of endpoints.
func (s *Server) routes() {
	s.handle(http.MethodGet, "/v1/health", s.handleHealth, routePublic|routeNoBudget|routeQuiet)
	s.handle(http.MethodGet, "/v1/ready", s.handleReady, routePublic|routeNoBudget|routeQuiet)
	s.handle(http.MethodPost, "/v1/node/proof", s.handleNodeProof, routePublic|routeNoBudget)
	s.handle(http.MethodGet, "/v1/state", s.handleState, 0)
	s.stateProofRoutes()
	s.handle(http.MethodGet, "/v1/events", s.handleEvents, routeObserver|routeList|routeLimited)
	s.handle(http.MethodGet, "/v1/events/export", s.handleExport, routeStreaming|routeObserver|routeLimited)
	if s.streams.stream != nil {
		s.handle(http.MethodGet, "/v1/stream", s.handleStream, routeStreaming|routeObserver|routeQueryToken)
	}
	s.handle(http.MethodGet, "/v1/client/network/status", s.handleNetworkStatus, 0)
	s.handle(http.MethodGet, "/v1/audit", s.handleAudit, routeOwner|routeList)
	s.adminRoutes()
	s.backupRoutes()
	s.paymentAccountRoutes()
	s.civilizationRoutes()
	s.missionRoutes()
	s.handle(http.MethodGet, "/v1/game/catalog", s.handleGameCatalog, 0)
	s.gameRoutes()
	s.servicenetRoutes()
	s.mcpRoutes()
	s.transparencyRoutes()
	s.witnessRoutes()
	s.operatorRoutes()
}

// operatorRoutes registers what the operator reads rather than calls: the
// metrics, the API's own description and the supervision console.
func (s *Server) operatorRoutes() {
	s.handle(http.MethodGet, "/v1/metrics", s.handlePrometheus, routeObserver|routeQuiet)
	s.handle(http.MethodGet, "/v1/openapi.json", s.handleOpenAPI, routePublic)
	s.consoleRoutes()
}

// civilizationRoutes registers the identity and civilization endpoints, when the
// server has the identity commands and read model.
func (s *Server) civilizationRoutes() {
	if s.identities == nil {
		return
	}
	s.handle(http.MethodPost, "/v1/civilization/bootstrap-identity", s.handleBootstrapIdentity, routeOwner)
	s.handle(http.MethodGet, "/v1/civilization/identities", s.handleIdentities, routeList)
	s.handle(http.MethodGet, "/v1/civilization/public-identity", s.handleGetPublicIdentity, 0)
	s.handle(http.MethodPost, "/v1/civilization/public-identity", s.handlePostPublicIdentity, 0)
	s.handle(http.MethodGet, "/v1/civilization/controller-binding", s.handleGetControllerBinding, 0)
	s.handle(http.MethodPost, "/v1/civilization/controller-binding", s.handlePostControllerBinding, 0)
	s.handle(http.MethodGet, "/v1/civilization/profile", s.handleGetProfile, 0)
	s.handle(http.MethodPost, "/v1/civilization/profile", s.handlePostProfile, 0)
	s.handle(http.MethodGet, "/v1/civilization/metrics", s.handleMetrics, 0)
	s.handle(http.MethodGet, "/v1/civilization/briefing", s.handleCivilizationBriefing, 0)
	s.handle(http.MethodGet, "/v1/supervision/identities", s.handleSupervisionIdentities, routeOwner|routeList)
	s.handle(http.MethodGet, "/v1/supervision/home", s.handleSupervisionHome, 0)
	s.handle(http.MethodGet, "/v1/supervision/briefing", s.handleSupervisionBriefing, routeOwner)
}

// handler is one endpoint. It writes its success response itself and returns an
// error for anything else, which the server renders with writeError.
type handler func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error

type routeFlags uint16

const (
	// routePublic skips authentication (GET /v1/health, POST /v1/node/proof,
	// GET /v1/openapi.json, the console).
	routePublic routeFlags = 1 << iota
	// routeStreaming skips the handler timeout; the handler bounds itself.
	routeStreaming
	// routeObserver admits observer tokens too (docs/tokens.md: the event log, its
	// export, the stream and health). Without it an observer gets 403.
	routeObserver
	// routeOwner admits the owner token only (audit, admin); others get 403.
	routeOwner
	// routeList marks a list whose page may be as large as the byte budget; it
	// runs in one of the server's list slots (withListSlot).
	routeList
	// routeRegistry marks a registry proxy route: it waits on the agent
	// registry, so its timeout is registryHandlerTimeout, which leaves room
	// for the registry's own time-outs to answer 504 first.
	routeRegistry
	// routeQueryToken also takes the bearer token from ?token= when the request
	// has no Authorization header (docs/tokens.md: browsers cannot set headers on a
	// WebSocket). The parameter is removed before anything else sees the query.
	routeQueryToken
	// routeLimited puts a GET route under the per-token rate limit, which
	// covers every POST anyway (rateLimitedRoute).
	routeLimited
	// routeNoAgent refuses agent tokens on a route that routeObserver opens
	// to observers (docs/transparency.md: the transparency log is read by the owner
	// and observers).
	routeNoAgent
	// routeNoBudget keeps a route's small answers out of the response budget,
	// so that it never waits behind readers (GET /v1/health, POST
	// /v1/node/proof).
	routeNoBudget
	// routeQuiet logs the route's requests at Debug rather than Info: probes
	// and scrapes, which come every few seconds and say nothing new
	// (requestlog.go).
	routeQuiet
)

// handle registers h. The timeout is outermost so that authentication, including
// its audit write, is bounded too.
func (s *Server) handle(method, path string, h handler, flags routeFlags) {
	if s.log.ReadOnly() && writesChain(method, path) {
		h = refuseOnMirror // readonly.go
	}
	next := func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		err := checkQuery(r.URL.RawQuery)
		if err == nil {
			err = h(w, r, ps)
		}
		if err != nil {
			if tw, ok := w.(*timeoutWriter); ok {
				// Whatever the handler wrote before it failed has not been sent;
				// the error is the whole answer.
				tw.discard()
			}
			s.writeError(w, r, err)
		}
	}
	if flags&routeList != 0 {
		next = s.withListSlot(next)
	}
	if rateLimitedRoute(method, flags) {
		s.limitedRoutes = append(s.limitedRoutes, method+" "+path)
		if s.tokenLimits != nil {
			// Inside requireAuth, which names the token; outside the list
			// slot, so a refused request never waits for one.
			next = s.limitRate(next)
		}
	}
	if flags&routePublic == 0 {
		next = s.requireAuth(next, flags)
	}
	if flags&routeQueryToken != 0 {
		next = tokenFromQuery(next)
	}
	budget := s.budget
	if flags&routeNoBudget != 0 {
		budget = nil
	}
	switch {
	case flags&routeRegistry != 0:
		next = s.withTimeoutOf(func() time.Duration { return s.registryTimeout }, budget, next)
	case flags&routeStreaming == 0:
		next = s.withTimeoutOf(func() time.Duration { return s.handlerTimeout }, budget, next)
	}
	quiet := flags&routeQuiet != 0
	s.router.Handle(method, path, s.named(method, path, quiet, next))
	s.routeTable = append(s.routeTable, method+" "+path)
	if method == http.MethodGet {
		// HEAD is GET without the body (RFC 9110 §9.3.2); net/http drops what the
		// handler writes, so the headers, Content-Length included, are GET's.
		s.router.Handle(http.MethodHead, path, s.named(http.MethodHead, path, quiet, next))
	}
}

// named tells the request log which route serves the request, so that the
// metrics and the log name the pattern, never the path itself.
func (s *Server) named(method, path string, quiet bool, next httprouter.Handle) httprouter.Handle {
	rm := s.metrics.route(method, path)
	rm.quiet = quiet
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if rec, ok := w.(*statusRecorder); ok {
			rec.route = rm
		}
		next(w, r, ps)
	}
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// recoverPanic answers a panicking handler with 500 and logs the panic with its
// stack. A handler that has already sent its status cannot be answered; its
// connection is aborted so the client sees a broken response, not a short one.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request, v any) {
	stack := debug.Stack()
	if hp, ok := v.(*handlerPanic); ok {
		v, stack = hp.value, hp.stack
	}
	if v == http.ErrAbortHandler {
		panic(v) // the handler's deliberate way to cut a response short
	}
	s.logger.LogAttrs(r.Context(), slog.LevelError, "handler panicked",
		slog.String(logkey.Method, r.Method), slog.String(logkey.Path, r.URL.Path),
		slog.String(logkey.Panic, fmt.Sprint(v)), slog.String(logkey.Stack, string(stack)))
	if rec, ok := w.(*statusRecorder); ok && rec.wroteHeader {
		panic(http.ErrAbortHandler)
	}
	s.writeError(w, r, &Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"})
}

// Serve serves on ln until ctx is done, then shuts down gracefully (in-flight requests get up to 10s).
// It returns nil after a shutdown, also when stragglers had to be cut off (they are
// logged), and an error only if serving itself failed. It serves at most
// Options.MaxConns connections at once, over TCP and apart over unix sockets,
// and answers one more 503 at once; over TCP it also applies the per-address
// cap, the anonymous idle time-out and the reserve (connlimit.go).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.headerTimeout,
		ReadTimeout:       s.readTimeout,
		IdleTimeout:       s.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		Protocols:         servedProtocols(ln), // HTTP/2 over a TLSListener (tls.go)
	}
	cl := limitConns(ln, s.maxConns)
	cl.perAddr, cl.anonIdle = s.maxConnsPerAddr, min(s.anonIdleTimeout, s.idleTimeout)
	cl.proxies = s.auth.proxies
	s.conns.Store(cl)
	hs.ConnState, hs.ConnContext = cl.connState, cl.connContext
	ln = cl
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(jsonErrorListener{ln}) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	s.stopping.Store(true)
	// WebSocket streams run on hijacked connections, which Shutdown neither
	// closes nor waits for: they are told to close (1001) first, and waited
	// for below with the other handlers.
	s.streams.shutdown()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		s.logger.Warn("requests still running after the shutdown grace period; closing them", logkey.Err, err)
		if err := hs.Close(); err != nil {
			s.logger.Warn("close http server", logkey.Err, err)
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	// Exports coalesced in the last second are recorded before the log closes.
	defer s.exportAudit.close()
	// Abandoned handlers stop at their context's end, which has passed; wait
	// for the last of them to leave the store.
	left := make(chan struct{})
	go func() { s.handlers.Wait(); s.streams.wait(); close(left) }()
	select {
	case <-left:
	case <-sctx.Done():
		s.logger.Warn("handlers still running after the shutdown grace period")
	}
	return nil
}
