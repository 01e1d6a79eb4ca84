package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/stream"
)

// serveConfig is the command line of serve (civnode serve --help).
type serveConfig struct {
	dataDir string
	addr    string
	governs []string
	catalog string // game catalog file; "" is the built-in catalog
	// pageBytes is the byte budget of one page of a list response.
	pageBytes int
	// responseBudget bounds the response bytes held at once, over every
	// request; 0: civhttp.DefaultResponseBudgetPages × pageBytes.
	responseBudget int64
	// rateLimit is each token's requests a second on the rate-limited routes,
	// rateBurst the requests it may make at once; 0: no limit, 2 × rateLimit.
	rateLimit float64
	rateBurst int
	// maxConns caps the connections served at once; 0: no cap.
	maxConns int
	// maxConnsPerAddr caps those of one client address; 0: no cap.
	maxConnsPerAddr int
	// natsListen opens a NATS client port; "" none (in-process only).
	natsListen string
	// natsLeaf joins a NATS server or cluster as a leaf node; "" none.
	natsLeaf string
	// natsMaxConns and natsMaxSubs cap the NATS port's clients and each
	// one's subscriptions (0: no cap of the node's); natsMaxPending is the
	// bytes queued for one NATS client before it is cut off.
	natsMaxConns, natsMaxSubs int
	natsMaxPending            int64
	// registryURL is the agent registry the node proxies.
	registryURL string
	// modelCache bounds the read models' write-through cache, in bytes.
	modelCache int64
	// mirrorOf, when set, serves a mirror of the node published there
	// (mirror_serve.go), verified as mirror verifies it.
	mirrorOf string
	mirror   mirrorConfig
}

func (m *Main) newServeCommand(g *globals) *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the node: the control API over the event log",
		Long: `serve runs the node until SIGINT or SIGTERM. On first start it creates the data
dir (mode 0700), the node key node.key and the owner token control.token (both
mode 0600). A key or token file readable by group or others is used with a
warning. Once it serves it prints one line to stdout:

  civnode listening on http://HOST:PORT

with the port resolved when --addr asks for port 0. It also serves the API on
the unix socket control.sock in the data dir (mode 0600; replaced if a killed
node left one, removed on a clean stop), through which the CLI reaches the
node, and civnode oracle on the unix socket oracle.sock beside it (mode 0600;
not HTTP, see docs/oracle.md). Logs go to stderr. The node refuses to start
when the newest events of its chain do not verify, and names the first bad seq.

Every committed event is published on the node's embedded NATS server, on
civnode.<node DID>.events.<type>, which feeds GET /v1/stream; every sealed
export is announced on civnode.<node DID>.exports (docs/streaming.md). The
server opens no port unless --nats-listen asks for one; a client of that port
may subscribe to the node's subjects, civnode.<node DID>.>, and publish
nothing; --nats-max-conns, --nats-max-subs and --nats-max-pending bound its
clients, apart from --max-conns. --nats-leaf
joins an existing NATS server or cluster as a leaf node (the URL's leafnodes
port, e.g. nats://hub:7422; credentials in the URL are used, never logged or
recorded), so observers anywhere subscribe there to civnode.<node DID>.events.>.
The link is redialled while it is down; within a second of each time it goes up
or down, the node appends peer.connected or peer.disconnected to its chain.

Each token may make --rate-limit requests a second, --rate-burst at once, to
the routes that write, call the registry, run MCP tools or read the event log;
past that it is answered 429 with Retry-After. An address that keeps failing
authentication is answered 429 too. At most --max-conns connections are served
at once (the control socket has as many of its own); one more is answered 503
at once and closed. One client address (an IPv4 address, an IPv6 /64) may hold
--max-conns-per-addr of them. A connection on which no request has carried a
valid token is closed after 5 s idle, and gives way to a new connection when
the node nears its cap. At most --response-budget bytes of responses are held in
memory at once; a read over it waits up to a second, then is answered 503 busy
with Retry-After (health and the node proof are never held back). Every limit is listed in docs/limits.md.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.check(); err != nil {
				return err
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.serve(cmd.Context(), cfg, logger)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "listen address HOST:PORT; port 0 picks a free port")
	f.StringSliceVar(&cfg.governs, "governs", []string{"genesis"}, "subnets this node is the governance actor for, comma separated")
	f.IntVar(&cfg.pageBytes, "page-bytes", civhttp.DefaultPageBytes, "byte `BUDGET` of one page of a list response; a page ends before the item that would pass it (docs/limits.md)")
	f.Int64Var(&cfg.responseBudget, "response-budget", 0, "`BYTES` of responses held in memory at once, node-wide; a read over it waits up to 1 s, then is answered 503 busy (default 16 × --page-bytes; docs/limits.md)")
	f.Float64Var(&cfg.rateLimit, "rate-limit", civhttp.DefaultRateLimit, "requests a second each token may make to the write, registry, MCP and event-log routes; over it: 429 with Retry-After (0: no limit; docs/limits.md)")
	f.IntVar(&cfg.rateBurst, "rate-burst", 0, "requests a token may make at once beyond --rate-limit (default 2 × --rate-limit)")
	f.IntVar(&cfg.maxConns, "max-conns", civhttp.DefaultMaxConns, "connections served at once, over TCP and apart on the control socket; one more is answered 503 at once (0: no cap)")
	f.IntVar(&cfg.maxConnsPerAddr, "max-conns-per-addr", civhttp.DefaultMaxConnsPerAddr, "TCP connections one client address (IPv4 address, IPv6 /64) may hold at once; one more is answered 503 at once (0: no cap)")
	f.StringVar(&cfg.catalog, "catalog", "", "game catalog JSON `FILE` (default: the catalog built into the binary; see docs/game.md)")
	f.StringVar(&cfg.natsListen, "nats-listen", "", "open a NATS client port on `HOST:PORT` for observers (default: none, in-process only; port 0 picks a free port)")
	f.StringVar(&cfg.registryURL, "registry-url", DefaultRegistryURL, "the agent registry the node proxies (`URL`; \"\": none, the registry routes answer 503 registry_not_configured); its credential is <data-dir>/registry.credential")
	f.StringVar(&cfg.natsLeaf, "nats-leaf", "", "join the NATS server or cluster at `URL` (its leafnodes port, nats://host:7422) as a leaf node")
	f.IntVar(&cfg.natsMaxConns, "nats-max-conns", stream.DefaultMaxConns, "clients of the --nats-listen port at once; one more is refused as it connects (0: NATS's own cap, 65,536)")
	f.IntVar(&cfg.natsMaxSubs, "nats-max-subs", stream.DefaultMaxSubs, "subscriptions of one --nats-listen client; one more is refused (0: no cap)")
	f.Int64Var(&cfg.modelCache, "model-cache", eventlog.DefaultModelCacheSize, "`BYTES` of read-model records kept in memory for the write path's decisions and folds (docs/limits.md); at least 1 MiB")
	f.Int64Var(&cfg.natsMaxPending, "nats-max-pending", stream.DefaultMaxPending, "`BYTES` queued for one NATS client before it is cut off as a slow consumer; at least 8 MiB")
	f.StringVar(&cfg.mirrorOf, "mirror-of", "", "follow the node published at `URL` and serve it read-only (see civnode mirror; docs/mirrors.md)")
	cfg.mirror.flags(cmd, "mirror-")
	return cmd
}

// check refuses flag values that mean nothing.
func (cfg serveConfig) check() error {
	switch {
	case cfg.rateLimit < 0 || math.IsNaN(cfg.rateLimit) || math.IsInf(cfg.rateLimit, 0):
		return usageErrorf("--rate-limit must be a number of requests a second, 0 or more (0: no limit)")
	case cfg.rateBurst < 0:
		return usageErrorf("--rate-burst must be 0 or more (0: twice --rate-limit)")
	case cfg.maxConns < 0:
		return usageErrorf("--max-conns must be 0 or more (0: no cap)")
	case cfg.natsMaxConns < 0:
		return usageErrorf("--nats-max-conns must be 0 or more (0: NATS's own cap)")
	case cfg.natsMaxSubs < 0:
		return usageErrorf("--nats-max-subs must be 0 or more (0: no cap)")
	case cfg.natsMaxPending < stream.MaxPayload:
		return usageErrorf("--nats-max-pending must be at least %d bytes, the largest NATS message", stream.MaxPayload)
	case cfg.responseBudget != 0 && cfg.responseBudget < int64(cfg.pageBytes):
		return usageErrorf("--response-budget must be at least --page-bytes (%d), or 0 for the default", cfg.pageBytes)
	case cfg.maxConnsPerAddr < 0:
		return usageErrorf("--max-conns-per-addr must be 0 or more (0: no cap)")
	case cfg.modelCache < 1<<20:
		return usageErrorf("--model-cache must be at least 1 MiB (1048576)")
	}
	return nil
}

// httpRateLimit is --rate-limit as civhttp.Options takes it, where 0 is the
// default and a negative limit is none.
func (cfg serveConfig) httpRateLimit() float64 {
	if cfg.rateLimit == 0 {
		return -1
	}
	return cfg.rateLimit
}

// httpMaxConns is --max-conns as civhttp.Options takes it.
func (cfg serveConfig) httpMaxConns() int {
	if cfg.maxConns == 0 {
		return -1
	}
	return cfg.maxConns
}

// natsLimit is a --nats-max-* cap as stream.Options takes it, where 0 is the
// default and a negative cap is none.
func natsLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// httpMaxConnsPerAddr is --max-conns-per-addr as civhttp.Options takes it.
func (cfg serveConfig) httpMaxConnsPerAddr() int {
	if cfg.maxConnsPerAddr == 0 {
		return -1
	}
	return cfg.maxConnsPerAddr
}

// serve runs the node until ctx is done.
func (m *Main) serve(ctx context.Context, cfg serveConfig, logger *slog.Logger) (err error) {
	if cfg.mirrorOf != "" {
		return m.serveMirror(ctx, cfg, logger)
	}
	// First, so that a bad catalog file stops start-up before anything is created.
	cat, err := loadCatalog(cfg.catalog)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(cfg.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	if err := dir.Create(logger); err != nil {
		return err
	}
	key, err := dir.ServeNodeKey(logger)
	if err != nil {
		return err
	}
	token, err := datadir.LoadOrCreateControlToken(dir.TokenPath(), logger)
	if err != nil {
		return err
	}
	// Before the log: its OnCommit publishes on it. A leaf link that comes up
	// while the log opens is queued by peers and recorded once it is open.
	peers := newPeerRecorder(logger)
	st, err := stream.Start(stream.Options{
		NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Listen:  cfg.natsListen, LeafURL: cfg.natsLeaf, OnPeer: peers.note, Logger: logger,
		MaxConns: natsLimit(cfg.natsMaxConns), MaxSubs: natsLimit(cfg.natsMaxSubs), MaxPending: cfg.natsMaxPending,
	})
	if err != nil {
		return err
	}
	closeStream := sync.OnceValue(st.Close)
	defer func() {
		if cerr := closeStream(); cerr != nil && err == nil {
			err = fmt.Errorf("close nats: %w", cerr)
		}
	}()
	logNATS(logger, st.Status())
	// Before the log and the registry client, which report into it.
	metrics := civhttp.NewMetrics()
	registry, err := openRegistry(dir, cfg.registryURL, key, logger, metrics.ObserveRegistry)
	if err != nil {
		return err
	}
	node, err := openCore(ctx, dir, key, core.Config{Catalog: cat, Governs: cfg.governs,
		Keys: keystore(dir), Registry: registry}, logger,
		logHooks{onCommit: st.Publish, onGroupCommit: metrics.ObserveGroupCommit, onTreeBuild: m.treeBuildBar(), modelCache: cfg.modelCache})
	var ce *eventlog.ChainError
	if errors.Is(err, eventlog.ErrCorrupt) {
		return fmt.Errorf("%w; the node will not start on a damaged store: restore the data dir from a backup", err)
	} else if errors.As(err, &ce) {
		return fmt.Errorf("%w; the node will not start on a chain that does not verify", err)
	}
	if err != nil {
		return err
	}
	// Runs before the stream's own deferred close: the peer recorder stops,
	// then NATS, then the log, so nothing is published or recorded on a
	// closed log.
	recordCtx, stopRecording := context.WithCancel(context.WithoutCancel(ctx))
	recorded := make(chan struct{})
	checkpointsDone := make(chan struct{})
	defer func() {
		stopRecording()
		<-recorded
		<-checkpointsDone
		if cerr := closeStream(); cerr != nil && err == nil {
			err = fmt.Errorf("close nats: %w", cerr)
		}
		if cerr := node.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	chain := node.Log
	go func() {
		defer close(recorded)
		peers.record(recordCtx, commands.NewPeers(chain))
	}()
	go func() {
		defer close(checkpointsDone)
		st.PublishCheckpoints(recordCtx, chain, stream.CheckpointInterval)
	}()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	// After openCore: the database lock proves that a socket already in the
	// data dir is stale.
	if sock := listenControlSocket(dir.SocketPath(), logger); sock != nil {
		ln = civhttp.MergeListeners(ln, sock)
	}
	version := buildVersion()
	// Not ctx: a signal during start-up still leaves a started/stopped pair.
	if _, err := chain.Audit(context.WithoutCancel(ctx), "node.started", chain.NodeDID(), map[string]any{
		"addr": addr, "version": version, "tip_seq": chain.Tip().Seq,
	}); err != nil {
		ln.Close()
		return fmt.Errorf("audit node.started: %w", err)
	}
	// After node.started, and closed before node.stopped, so that every
	// oracle event of this run falls between the two.
	oracle := startOracleSocket(ctx, dir.OracleSocketPath(), node, logger)
	defer oracle.Close()
	srv := civhttp.New(serverOptions(node, civhttp.Options{
		OwnerToken:     token,
		Governs:        cfg.governs,
		Catalog:        cat,
		PageBytes:      cfg.pageBytes,
		ResponseBudget: cfg.responseBudget,
		RateLimit:      cfg.httpRateLimit(),
		RateBurst:      cfg.rateBurst,
		MaxConns:       cfg.httpMaxConns(),
		Logger:         logger,
		Stream:         st,

		MaxConnsPerAddr: cfg.httpMaxConnsPerAddr(),
		Snapshot: func(ctx context.Context) (civhttp.Snapshot, error) {
			snap, err := snapshotStore(ctx, chain, dir, time.Now())
			return civhttp.Snapshot{Dir: snap.Dir, Backup: snap.Backup}, err
		},
		Metrics: metrics,
	}))
	logger.Info("serving", "addr", addr, "node_did", chain.NodeDID(), "data_dir", string(dir),
		"tip_seq", chain.Tip().Seq, "version", version, "catalog_version", cat.Version, "registry", registryLabel(cfg.registryURL),
		"rate_limit", cfg.rateLimit, "max_conns", cfg.maxConns, "max_conns_per_addr", cfg.maxConnsPerAddr)
	if _, err := fmt.Fprintf(m.Stdout, "civnode listening on http://%s\n", addr); err != nil {
		ln.Close()
		return fmt.Errorf("print listening line: %w", err)
	}

	// Serve returns nil once ctx is done and in-flight requests have finished;
	// the stream's WebSocket clients are closed by then, and the stream server
	// itself is closed by the deferred function above, after node.stopped.
	serveErr := srv.Serve(ctx, ln)
	if err := oracle.Close(); err != nil {
		logger.Warn("stopping the oracle socket", "err", err)
	}
	// The stop is recorded although ctx, the reason for stopping, is done.
	if _, err := chain.Audit(context.WithoutCancel(ctx), "node.stopped", chain.NodeDID(), map[string]any{
		"tip_seq": chain.Tip().Seq,
	}); err != nil {
		return errors.Join(serveErr, fmt.Errorf("audit node.stopped: %w", err))
	}
	if serveErr != nil {
		return serveErr
	}
	logger.Info("stopped", "tip_seq", chain.Tip().Seq)
	return nil
}

// logNATS says whether the node opened a NATS port, and where its leaf link
// goes (without the URL's credentials).
func logNATS(logger *slog.Logger, st stream.Status) {
	if st.NATS.Listen == "" {
		logger.Info("nats in process only: no listener", "server_id", st.NATS.ServerID, "version", st.NATS.Version)
	} else {
		logger.Info("nats listening", "addr", st.NATS.Listen, "server_id", st.NATS.ServerID, "version", st.NATS.Version)
	}
	for _, l := range st.Leafs {
		logger.Info("nats joins a hub as a leaf node", "remote", l.Remote)
	}
}
