package stream

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Options configures Start.
type Options struct {
	// NodeDID names the node; subjects are civnode.<NodeDID>.… and it is also
	// the embedded server's name, which a leaf hub shows for the link. Required.
	NodeDID string
	// Listen is host:port for a NATS client listener (serve --nats-listen); port
	// 0 picks a free port. "" opens none: only in-process connections.
	Listen string
	// Authenticate lets a Listen port client in: it presents a node token as
	// its NATS token or as the password of any user, and without one that
	// Authenticate takes it is refused at connect. Required with Listen.
	Authenticate TokenCheck
	// TLSCertFile and TLSKeyFile, both or neither, make the Listen port
	// speak TLS only (serve --nats-tls-cert, --nats-tls-key), with the pair
	// loaded again when a file changes; the node's in-process connections
	// are apart.
	TLSCertFile, TLSKeyFile string
	// LeafURL joins an existing NATS server or cluster as a leaf node (serve
	// --nats-leaf nats://[user:password@]host:port); "" none. The server
	// redials a lost link for as long as it runs, with NATS's own back-off.
	LeafURL string
	// OnPeer, if set, is called when a leaf link goes up or down, on the leaf
	// poller's goroutine (never on the commit path), one change at a time.
	OnPeer func(PeerChange)
	// LeafPoll is how often the leaf links are looked at; default one second.
	LeafPoll time.Duration
	// Logger receives the package's messages and the NATS server's warnings and
	// errors (its notices at debug level); default slog.Default().
	Logger *slog.Logger

	// MaxConns caps the clients of the Listen port at once; one more is
	// refused as it connects. 0: DefaultMaxConns; negative: NATS's own cap
	// (64K). The node's in-process connections and the leaf link are apart.
	MaxConns int
	// MaxSubs caps the subscriptions of one Listen port client; one more is
	// refused. 0: DefaultMaxSubs; negative: none. The leaf link, which carries
	// a hub's interest, is not capped.
	MaxSubs int
	// MaxPending is the bytes NATS queues for one client connection before it
	// cuts the client off as a slow consumer. 0: DefaultMaxPending; at least
	// the largest message (8 MiB). It applies to every client connection, the
	// node's in-process ones too, which are read as fast as NATS writes.
	MaxPending int64
}

// The Listen port's limits by default. An observer subscribes to a few of
// the node's subjects; a few dozen observers is a lot for one node's own
// port, since observers at scale follow the node at a hub (--nats-leaf).
const (
	DefaultMaxConns   = 128
	DefaultMaxSubs    = 64
	DefaultMaxPending = 16 << 20
)

// MaxPayload bounds one NATS message. An event is at most the HTTP body limit
// (1 MiB) plus its envelope, above NATS's default of 1 MiB, so the bound is
// raised; a leaf hub applies its own max_payload to what it forwards.
const MaxPayload = 8 << 20

// portMaxPayload bounds what one Listen port client may send in one message.
// It may publish nothing; the bound makes NATS refuse a large message at its
// first line instead of reading it before the permission check.
const portMaxPayload = 1 << 10

// inProcessConns counts the node's own client connections (pub and sub),
// which the server-wide connection cap must leave room for.
const inProcessConns = 2

// tlsTimeout bounds a port client's TLS handshake.
const tlsTimeout = 5 * time.Second

// readyTimeout bounds the wait for the embedded server to start.
const readyTimeout = 10 * time.Second

// Server is the embedded NATS server with its in-process connections: pub
// publishes the node's events and export notices, sub carries the one NATS
// subscription (fanout) that every in-process Subscription is served from, so
// that NATS closing a subscriber's connection as a slow consumer never touches
// publication.
type Server struct {
	did        string
	events     string // "civnode.<node>.events.", cut from a subject to get the type
	log        *slog.Logger
	ns         *server.Server
	pub, sub   *nats.Conn
	started    time.Time
	leafRemote string    // LeafURL's host:port, without credentials; "" without a leaf
	cert       *portCert // the Listen port's TLS pair; nil without TLS

	published, publishErrors, slowDrops atomic.Uint64

	// fanout receives every event once, on one NATS goroutine, and hands it to
	// each live Subscription (dispatch): a hundred WebSocket clients cost NATS
	// one delivery an event, not a hundred.
	fanout *nats.Subscription
	// live is the set dispatch reads, replaced whole on every change (a
	// subscription comes or goes once; dispatch runs for every event).
	live atomic.Pointer[[]*Subscription]

	mu     sync.Mutex
	closed bool
	subs   map[*Subscription]struct{}
	leafs  map[uint64]leafLink // the leaf links that are up, by NATS connection id
	// leafSince is when the configured leaf link last went up or down, the
	// server's start while it has never been up.
	leafSince time.Time

	stopPoll  chan struct{}
	pollDone  chan struct{}
	authDone  chan struct{} // the port's token sweep (portAuth.watchTokens) ended
	certDone  chan struct{} // the port's certificate reload (portCert.watch) ended
	closeOnce sync.Once
}

// Start runs the embedded NATS server and connects to it in process. It returns
// once the server is ready and, with Listen, its port is open.
func Start(opts Options) (*Server, error) {
	if opts.NodeDID == "" || strings.ContainsAny(opts.NodeDID, ".*> \t\r\n") {
		return nil, fmt.Errorf("start nats: node did %q is not one subject token", opts.NodeDID)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With(logkey.Component, "nats")
	poll := opts.LeafPoll
	if poll <= 0 {
		poll = time.Second
	}
	lim, err := opts.limits()
	if err != nil {
		return nil, err
	}
	if opts.Listen != "" && opts.Authenticate == nil {
		return nil, ErrNoTokenCheck
	}
	so := &server.Options{}
	password, err := natsAccounts(so, lim)
	if err != nil {
		return nil, err
	}
	auth := newPortAuth(opts.NodeDID, password, opts.Authenticate, logger)
	so.CustomClientAuthentication = auth
	so.ServerName = opts.NodeDID
	// The node owns the process's signals; NATS must not install handlers.
	so.NoSigs = true
	so.DontListen = true
	so.MaxPayload = MaxPayload
	so.MaxPending = lim.pending
	so.MaxConn = lim.conns
	// No $SYS: nothing here needs it (the leaf link and the status work
	// without), and a port client could otherwise ask it about connections.
	so.NoSystemAccount = true
	if opts.Listen != "" {
		host, port, err := splitListen(opts.Listen)
		if err != nil {
			return nil, err
		}
		so.DontListen, so.Host, so.Port = false, host, port
	}
	var cert *portCert
	if opts.TLSCertFile != "" || opts.TLSKeyFile != "" {
		if opts.Listen == "" {
			return nil, fmt.Errorf("%w: a certificate without a listen port", ErrTLSFiles)
		}
		if cert, err = newPortCert(opts.TLSCertFile, opts.TLSKeyFile, logger); err != nil {
			return nil, err
		}
		so.TLSConfig = cert.config()
		so.TLSTimeout = tlsTimeout.Seconds()
	}
	s := &Server{
		did:      opts.NodeDID,
		events:   EventSubject(opts.NodeDID, ""),
		log:      logger,
		subs:     map[*Subscription]struct{}{},
		leafs:    map[uint64]leafLink{},
		stopPoll: make(chan struct{}),
		pollDone: make(chan struct{}),
		authDone: make(chan struct{}),
		certDone: make(chan struct{}),
		cert:     cert,
	}
	if opts.LeafURL != "" {
		u, err := parseLeafURL(opts.LeafURL)
		if err != nil {
			return nil, err
		}
		// No DenyImports of the node's subjects: NATS applies a leaf remote's
		// deny_imports to what it delivers to the hub's wildcard interest
		// too, which would cut the node's feed at the hub. What the hub sends
		// under them lands in the global account, where nothing but the link
		// listens (natsAccounts).
		so.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: []*url.URL{u}}}
		s.leafRemote = u.Host
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	if err := exportNodeSubjects(ns, opts.NodeDID); err != nil {
		return nil, err
	}
	if err := auth.bind(ns); err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	nl := &natsLogger{log: logger}
	ns.SetLoggerV2(nl, false, false, false)
	ns.Start()
	if err := waitReady(ns, nl); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	s.ns, s.started = ns, time.Now().UTC()
	s.leafSince = s.started
	if s.pub, err = s.connect(publisherName, password); err == nil {
		s.sub, err = s.connect(subscriberName, password)
	}
	if err == nil {
		s.fanout, err = s.sub.Subscribe(filterSubject(s.did, ""), s.dispatch)
	}
	if err == nil {
		// The round trip makes the server hold the subscription before Start
		// returns; from then on every published event reaches dispatch.
		err = s.sub.Flush()
	}
	if err != nil {
		s.shutdown()
		return nil, err
	}
	go s.pollLeafs(poll, opts.OnPeer)
	go auth.watchTokens(s.stopPoll, s.authDone)
	go cert.watch(s.stopPoll, s.certDone)
	return s, nil
}

// splitListen parses --nats-listen. NATS reads port 0 as its default 4222, so
// a free port is asked for with its RANDOM_PORT.
func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("nats listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("nats listen address %q: bad port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// parseLeafURL checks a --nats-leaf URL. Credentials in it are passed to NATS
// but never logged, reported or written to the chain.
func parseLeafURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the URL, credentials and all.
		return nil, errors.New("nats leaf url: not a URL")
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return nil, fmt.Errorf("nats leaf url: scheme %q: want nats, tls, ws or wss", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("nats leaf url: no host")
	}
	return u, nil
}

// Names of the in-process connections, which a leaf hub or a connz also show.
const (
	publisherName  = "civnode-publisher"
	subscriberName = "civnode-subscribers"
)

// nodeUser is the user of the node's in-process connections, and
// nodeAccount their NATS account; portUser is every client of the Listen
// port, in portAccount. The leaf link lives in NATS's global account.
const (
	nodeUser    = "civnode"
	nodeAccount = "CIVNODE"
	portUser    = "observer"
	portAccount = "OBSERVERS"
)

// limits are Options' limits as NATS takes them.
type limits struct {
	conns   int   // server-wide MaxConn: port clients plus inProcessConns; 0: NATS's default
	subs    int   // per port client; -1: none
	pending int64 // per client connection
}

func (o Options) limits() (limits, error) {
	l := limits{conns: DefaultMaxConns, subs: DefaultMaxSubs, pending: DefaultMaxPending}
	switch {
	case o.MaxConns > 0:
		l.conns = o.MaxConns
	case o.MaxConns < 0:
		l.conns = 0
	}
	if l.conns > 0 {
		l.conns += inProcessConns
	}
	switch {
	case o.MaxSubs > 0:
		l.subs = o.MaxSubs
	case o.MaxSubs < 0:
		l.subs = -1
	}
	if o.MaxPending != 0 {
		l.pending = o.MaxPending
	}
	if l.pending < MaxPayload {
		return l, fmt.Errorf("start nats: max pending %d bytes is below the largest message, %d bytes", l.pending, MaxPayload)
	}
	return l, nil
}

// nodeSubjects is every subject of the node: civnode.<did>.>.
func nodeSubjects(did string) string {
	return "civnode." + did + ".>"
}

// natsAccounts keeps the node's subjects the node's, in three NATS accounts.
// The node's in-process connections log in as nodeUser, with a password made
// for this run that only this process knows, into nodeAccount, which exports
// civnode.<did>.> to the global account, where the leaf link to a hub lives,
// and to portAccount, where every client of the Listen port lives once its
// token is taken (portAuth). An export flows one way, and the two importing
// accounts share nothing, so what a hub sends over the link reaches neither
// the node's own subscribers nor the port's clients, and the port's clients
// reach neither the hub nor each other.
//
// The port is a read-only feed of this node: its clients may subscribe under
// civnode.<did>.> only and publish nothing (portAuth's permissions; so they
// cannot ask $SYS about connections either, and there is no $SYS). Its
// account caps each client's subscriptions (limits.subs) and what one
// message of theirs may weigh.
func natsAccounts(so *server.Options, lim limits) (string, error) {
	// NATS sets an account's limits without a JWT only from its configuration.
	if err := so.ProcessConfigString(fmt.Sprintf("accounts { %s { limits { max_subscriptions: %d, max_payload: %d } } }",
		portAccount, lim.subs, portMaxPayload)); err != nil {
		return "", fmt.Errorf("start nats: port account: %w", err)
	}
	if len(so.Accounts) != 1 || so.Accounts[0].Name != portAccount {
		return "", errors.New("start nats: port account: not configured")
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("start nats: password: %w", err)
	}
	so.Accounts = append(so.Accounts, server.NewAccount(nodeAccount))
	return hex.EncodeToString(b[:]), nil
}

// exportNodeSubjects makes the node account's subjects visible in the global
// account and the port's (see natsAccounts).
func exportNodeSubjects(ns *server.Server, did string) error {
	node, err := ns.LookupAccount(nodeAccount)
	if err != nil {
		return fmt.Errorf("start nats: %w", err)
	}
	port, err := ns.LookupAccount(portAccount)
	if err != nil {
		return fmt.Errorf("start nats: %w", err)
	}
	subjects := nodeSubjects(did)
	if err := node.AddStreamExport(subjects, nil); err != nil {
		return fmt.Errorf("start nats: export subjects: %w", err)
	}
	for _, acc := range []*server.Account{ns.GlobalAccount(), port} {
		if err := acc.AddStreamImport(node, subjects, ""); err != nil {
			return fmt.Errorf("start nats: import subjects into %s: %w", acc.Name, err)
		}
	}
	return nil
}

// waitReady waits for the server to be ready, or for the fatal error that
// means it never will be (a listen address in use), which NATS only logs.
func waitReady(ns *server.Server, nl *natsLogger) error {
	deadline := time.Now().Add(readyTimeout)
	for !ns.ReadyForConnections(25 * time.Millisecond) {
		if msg := nl.fatal(); msg != "" {
			// NATS's messages start with a capital, errors here do not.
			return fmt.Errorf("start nats: %s", strings.ToLower(msg[:1])+msg[1:])
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start nats: not ready after %s", readyTimeout)
		}
	}
	return nil
}

// connect opens an in-process connection. It never reconnects: the server it
// talks to lives and dies with this process.
func (s *Server) connect(name, password string) (*nats.Conn, error) {
	nc, err := nats.Connect("", nats.InProcessServer(s.ns), nats.Name(name), nats.NoReconnect(),
		nats.UserInfo(nodeUser, password),
		nats.ErrorHandler(s.onAsyncError),
		nats.DisconnectErrHandler(s.onDisconnect))
	if err != nil {
		return nil, fmt.Errorf("connect to nats in process: %w", err)
	}
	return nc, nil
}

// onAsyncError learns of messages NATS dropped on their way to a
// subscription; the subscription now has a gap, so it ends.
func (s *Server) onAsyncError(_ *nats.Conn, ns *nats.Subscription, err error) {
	if ns == nil {
		s.log.Warn("nats connection error", logkey.Err, err)
		return
	}
	if ns == s.fanout {
		// Every subscription now has a gap.
		s.log.Warn("nats dropped messages for the stream subscriptions; ending them", logkey.Err, err)
		s.endAll(ErrSlowConsumer)
	}
}

// onDisconnect: an in-process connection lost outside Close. For the
// subscriber connection that means the server judged it a slow consumer and
// messages were lost, so every subscription ends; for the publisher, events
// are no longer published until restart, which Status shows in its counters.
func (s *Server) onDisconnect(nc *nats.Conn, err error) {
	if s.isClosed() {
		return
	}
	s.log.Error("in-process nats connection lost", logkey.Conn, nc.Opts.Name, logkey.Err, err)
	if nc.Opts.Name == subscriberName {
		s.endAll(ErrSlowConsumer)
	}
}

// Close ends every subscription with ErrClosed, flushes what was published to
// the server (and from there to a leaf hub, as far as the link takes it) and
// stops the server. A leaf link closed here is not reported to OnPeer: the
// node is stopping. Publish after Close does nothing.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.endAll(ErrClosed)
		close(s.stopPoll)
		<-s.pollDone
		<-s.authDone
		<-s.certDone
		if ferr := s.pub.FlushTimeout(2 * time.Second); ferr != nil {
			err = fmt.Errorf("close nats: flush: %w", ferr)
		}
		s.shutdown()
	})
	return err
}

func (s *Server) shutdown() {
	if s.pub != nil {
		s.pub.Close()
	}
	if s.sub != nil {
		s.sub.Close()
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
