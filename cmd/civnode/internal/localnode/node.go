package localnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/core"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/oraclesock"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/transparency"
)

// Node is a node that civnode serve runs, of its own chain or a mirror of
// another's (Config.Mirror): what OpenNode opened, served by Serve and
// stopped by Close. The two modes differ only in what they open (openOwn,
// openMirror); the listener, the control socket, the HTTP server, the
// notices to a service manager and the order of the shutdown are the same.
type Node struct {
	cfg    Config
	logger *slog.Logger

	// Opened by openOwn or openMirror.
	token   string
	stream  *stream.Server
	metrics *civhttp.Metrics
	core    *core.Core
	http    civhttp.Options // what the mode adds to cfg.HTTP
	own     bool            // the node's own chain: node.started and node.stopped, the oracle socket
	source  *transparency.Client
	origin  transparency.Key
	// base carries the values of OpenNode's ctx, never its end: the work
	// beside the server and the audits at start and stop outlive a done ctx.
	base context.Context
	// bg is the work beside the server (recorders, the checkpoint pump, the
	// follower), stopped by stopBg; each closes its channel in waits once
	// done. A mirror's follower that stops on evidence leaves the node
	// serving; one that fails otherwise stops bg, which stops Serve.
	bg       context.Context
	stopBg   context.CancelFunc
	waits    []chan struct{}
	followed chan error // the follower's end, once it runs

	ln      net.Listener // until Serve takes it
	addr    string
	srv     *civhttp.Server
	oracle  *oraclesock.Server
	started bool // node.started is recorded: Close records node.stopped
	clean   bool // Serve served and returned nil
}

// OpenNode opens the node that cfg describes, made in cfg.Dir on first
// start, up to a bound listener: a node of its own (openOwn) records
// node.started and opens the oracle socket; a mirror (cfg.Mirror, openMirror)
// follows its source from now on. A mirror stopped (ctx done) while it waits
// for a source that is down returns ctx's error, which Run takes for a stop.
// What is opened when a step fails is closed as Close closes it.
func OpenNode(ctx context.Context, cfg Config) (*Node, error) {
	n := &Node{cfg: cfg, logger: cfg.Logger, own: cfg.Mirror == nil, base: context.WithoutCancel(ctx)}
	n.bg, n.stopBg = context.WithCancel(n.base)
	if err := n.open(ctx); err != nil {
		n.Close() // the error that stopped the start is the one to report
		return nil, err
	}
	return n, nil
}

// open is OpenNode's sequence; on an error, n holds what it opened.
func (n *Node) open(ctx context.Context) error {
	cfg, logger, dir := n.cfg, n.logger, n.cfg.Dir
	// First, so that files that cannot be served stop the start before
	// anything is created or opened.
	if err := cfg.TLS.check(cfg.Addr, logger); err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if cfg.TLS.Enabled() {
		certs, err := newCertReloader(cfg.TLS.CertFile, cfg.TLS.KeyFile, logger)
		if err != nil {
			return err
		}
		if tlsConfig, err = cfg.TLS.config(certs); err != nil {
			return err
		}
		n.goBackground(certs.run)
	}
	if err := dir.Create(logger); err != nil {
		return err
	}
	open := n.openOwn
	if !n.own {
		open = n.openMirror
	}
	if err := open(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	n.addr = ln.Addr().String()
	if tlsConfig != nil {
		ln = civhttp.TLSListener(ln, tlsConfig) // the control socket below stays plain
	}
	// After the store opened: its lock proves that a socket already in the
	// data dir is stale.
	if sock := listenControlSocket(dir.SocketPath(), logger); sock != nil {
		ln = civhttp.MergeListeners(ln, sock)
	}
	n.ln = ln
	chain := n.core.Log
	if n.own {
		// Not ctx: a signal during start-up still leaves a started/stopped pair.
		if _, err := chain.Audit(n.base, "node.started", chain.NodeDID(), map[string]any{
			"addr": n.addr, "version": cfg.Version, "tip_seq": chain.Tip().Seq,
		}); err != nil {
			return fmt.Errorf("audit node.started: %w", err)
		}
		n.started = true
		// After node.started, and closed before node.stopped, so that every
		// oracle event of this run falls between the two.
		n.oracle = startOracleSocket(ctx, dir.OracleSocketPath(), n.core, logger)
	}
	opts := cfg.HTTP
	opts.OwnerToken, opts.Catalog, opts.Logger, opts.Stream, opts.Metrics = n.token, cfg.Catalog, logger, n.stream, n.metrics
	opts.Witness, opts.Witnesses, opts.Mirror, opts.ForkGuard = n.http.Witness, n.http.Witnesses, n.http.Mirror, n.http.ForkGuard
	// civnode backup of the running node, or mirror (docs/mirrors.md).
	opts.Snapshot = func(ctx context.Context) (civhttp.Snapshot, error) {
		snap, err := backup.Take(ctx, chain, string(dir), time.Now())
		return civhttp.Snapshot{Dir: snap.Dir, Backup: snap.Backup}, err
	}
	n.srv = civhttp.New(ServerOptions(n.core, opts))
	return nil
}

// goBackground runs work beside the server until Close stops it.
func (n *Node) goBackground(work func(ctx context.Context)) {
	done := make(chan struct{})
	n.waits = append(n.waits, done)
	go func() {
		defer close(done)
		work(n.bg)
	}()
}

// Serve serves the node on its listener until ctx is done (or a mirror's
// follower gives up), then returns once in-flight requests have finished;
// the stream's WebSocket clients are closed by then. Once it listens it
// calls cfg.Listening and tells a service manager (systemd, Type=notify)
// READY=1 with the address, and, once it stops, STOPPING=1; a failed notice
// is logged, not fatal: the node serves all the same. Call it once, then
// Close.
func (n *Node) Serve(ctx context.Context) error {
	ln := n.ln
	n.ln = nil
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(n.bg, stop)()
	cfg, logger, tip := n.cfg, n.logger, n.core.Log.Tip().Seq
	if n.own {
		logger.Info("serving", append([]any{"addr", n.addr, "node_did", n.core.Log.NodeDID(), "data_dir", string(cfg.Dir),
			"tip_seq", tip, "version", cfg.Version, "catalog_version", cfg.Catalog.Version, "registry", registryLabel(cfg.RegistryURL)},
			cfg.Settings...)...)
	} else {
		logger.Info("serving a mirror", logkey.Addr, n.addr, logkey.Origin, n.origin.Origin, logkey.From, n.source.Via(), logkey.DataDir, string(cfg.Dir), logkey.TipSeq, tip)
	}
	if err := cfg.Listening(n.addr); err != nil {
		ln.Close()
		return err
	}
	if err := cfg.Notify("READY=1\nSTATUS=serving on " + n.addr); err != nil {
		logger.Warn("sd_notify", logkey.Err, err)
	}
	// STOPPING=1 goes out as the stop begins, before in-flight requests
	// drain. The server may see ctx done before ctx's cancel has started
	// the AfterFunc, so the notice is also sent, once, when Serve returns.
	stopping := sync.OnceFunc(func() {
		if err := cfg.Notify("STOPPING=1"); err != nil {
			logger.Warn("sd_notify", logkey.Err, err)
		}
	})
	defer context.AfterFunc(ctx, stopping)()
	err := n.srv.Serve(ctx, ln)
	stopping()
	n.clean = err == nil
	return err
}

// Close stops the node, in this order: the listener if Serve never took
// it; the oracle socket; node.stopped recorded, and the "stopped" line
// after a clean Serve; the work beside the server (the recorders, the
// checkpoint pump, a mirror's follower); NATS; the log; a mirror's client
// of its source. So nothing is published or recorded on a closed log, and
// every oracle event of a run falls between node.started and node.stopped.
// It returns the first error among node.stopped's record, the follower's
// end, and closing NATS and the log. Call it once.
func (n *Node) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if n.ln != nil {
		n.ln.Close()
	}
	if err := n.oracle.Close(); err != nil {
		n.logger.Warn("stopping the oracle socket", logkey.Err, err)
	}
	if n.started {
		chain := n.core.Log
		// The stop is recorded although ctx, the reason for stopping, is done.
		_, err := chain.Audit(n.base, "node.stopped", chain.NodeDID(), map[string]any{"tip_seq": chain.Tip().Seq})
		if err != nil {
			keep(fmt.Errorf("audit node.stopped: %w", err))
		} else if n.clean {
			n.logger.Info("stopped", logkey.TipSeq, chain.Tip().Seq)
		}
	}
	n.stopBg()
	for _, done := range n.waits {
		<-done
	}
	if n.followed != nil {
		keep(<-n.followed)
	}
	if n.stream != nil {
		if err := n.stream.Close(); err != nil {
			keep(fmt.Errorf("close nats: %w", err))
		}
	}
	if n.core != nil {
		if err := n.core.Close(); err != nil {
			keep(fmt.Errorf("close event log: %w", err))
		}
	}
	if n.source != nil {
		n.source.Close()
	}
	return first
}

// Run is civnode serve: it opens the node of cfg (OpenNode), serves it
// until ctx is done (Serve) and closes it (Close). A mirror stopped while
// it waited for its source to come up has stopped, not failed: nil.
func Run(ctx context.Context, cfg Config) error {
	n, err := OpenNode(ctx, cfg)
	if err != nil {
		if cfg.Mirror != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil
		}
		return err
	}
	serveErr := n.Serve(ctx)
	closeErr := n.Close()
	if serveErr == nil {
		return closeErr
	}
	if closeErr == nil {
		return serveErr
	}
	return errors.Join(serveErr, closeErr)
}
