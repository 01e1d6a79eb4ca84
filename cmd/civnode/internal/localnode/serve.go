package localnode

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/stream"
)

// Config is what Serve runs: serve's settings, already checked and mapped
// onto the options of the packages they configure, and the surroundings the
// command gives it.
type Config struct {
	Dir     datadir.Dir
	Addr    string
	Catalog *catalog.Catalog
	// RegistryURL is the agent registry the node proxies; "": none.
	RegistryURL string
	// ModelCache is the read models' write-through cache, in bytes.
	ModelCache int64
	// HTTP holds the server's limits and Governs; Serve adds the core, the
	// owner token, the catalog, the stream, the metrics, the logger and the
	// snapshot hook.
	HTTP civhttp.Options
	// NATS holds the stream's listener, leaf link and limits; Serve adds
	// the node DID, the peer hook and the logger.
	NATS stream.Options
	// Version, Commit and GoVersion are the build's (civnode_build_info,
	// node.started).
	Version, Commit, GoVersion string
	// Witnessing is who cosigns the node's checkpoints and whose it cosigns.
	Witnessing Witnessing
	// Settings are logged with the "serving" line: the limits as given.
	Settings []any

	Logger *slog.Logger
	// TreeBuildBar, if set, is told the progress of a one-time build of
	// the Merkle tree besides the log.
	TreeBuildBar eventlog.RebuildProgress
	// Listening is called once the node serves, with the address it
	// listens on (the port resolved); an error stops the node.
	Listening func(addr string) error
	// Notify tells a service manager of a state change (sd_notify); a
	// failure is logged, not fatal.
	Notify func(state string) error
}

// Serve runs the node of cfg.Dir until ctx is done: the data dir and its
// secrets made on first start, NATS, the registry client, the core, the
// peer recorder and the checkpoint pump, the TCP listener and the control
// socket, the oracle socket and the HTTP server. It stops them in the
// reverse order: the oracle socket, then node.stopped, then the recorders,
// NATS and the log, so that nothing is published or recorded on a closed
// log and every oracle event of a run falls between node.started and
// node.stopped.
func Serve(ctx context.Context, cfg Config) (err error) {
	logger, dir := cfg.Logger, cfg.Dir
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
	nats := cfg.NATS
	nats.NodeDID, nats.OnPeer, nats.Logger = eventlog.DIDKey(key.Public().(ed25519.PublicKey)), peers.note, logger
	st, err := stream.Start(nats)
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
	if err := metrics.SetBuildInfo(cfg.Version, cfg.Commit, cfg.GoVersion); err != nil {
		return err
	}
	registry, err := openRegistry(dir, cfg.RegistryURL, key, logger, metrics.ObserveRegistry)
	if err != nil {
		return err
	}
	node, err := Open(ctx, dir, key, core.Config{Catalog: cfg.Catalog, Governs: cfg.HTTP.Governs,
		Keys: Keystore(dir), Registry: registry}, logger,
		Hooks{OnCommit: st.Publish, OnGroupCommit: metrics.ObserveGroupCommit, OnTreeBuild: cfg.TreeBuildBar, ModelCache: cfg.ModelCache})
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
	witnessingDone := make(chan struct{})
	defer func() {
		stopRecording()
		<-recorded
		<-checkpointsDone
		<-witnessingDone
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
	wit, submitter, err := startWitnessing(recordCtx, cfg.Witnessing, dir, key, chain, st, logger, witnessingDone)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	// After Open: the database lock proves that a socket already in the
	// data dir is stale.
	if sock := listenControlSocket(dir.SocketPath(), logger); sock != nil {
		ln = civhttp.MergeListeners(ln, sock)
	}
	// Not ctx: a signal during start-up still leaves a started/stopped pair.
	if _, err := chain.Audit(context.WithoutCancel(ctx), "node.started", chain.NodeDID(), map[string]any{
		"addr": addr, "version": cfg.Version, "tip_seq": chain.Tip().Seq,
	}); err != nil {
		ln.Close()
		return fmt.Errorf("audit node.started: %w", err)
	}
	// After node.started, and closed before node.stopped, so that every
	// oracle event of this run falls between the two.
	oracle := startOracleSocket(ctx, dir.OracleSocketPath(), node, logger)
	defer oracle.Close()
	opts := cfg.HTTP
	opts.OwnerToken, opts.Catalog, opts.Logger, opts.Stream, opts.Metrics = token, cfg.Catalog, logger, st, metrics
	opts.Witness, opts.Witnesses = wit, submitter
	opts.Snapshot = func(ctx context.Context) (civhttp.Snapshot, error) {
		snap, err := backup.Take(ctx, chain, string(dir), time.Now())
		return civhttp.Snapshot{Dir: snap.Dir, Backup: snap.Backup}, err
	}
	srv := civhttp.New(ServerOptions(node, opts))
	logger.Info("serving", append([]any{"addr", addr, "node_did", chain.NodeDID(), "data_dir", string(dir),
		"tip_seq", chain.Tip().Seq, "version", cfg.Version, "catalog_version", cfg.Catalog.Version, "registry", registryLabel(cfg.RegistryURL)},
		cfg.Settings...)...)
	if err := cfg.Listening(addr); err != nil {
		ln.Close()
		return err
	}
	// A service manager (systemd, Type=notify) learns that the node serves,
	// and, once ctx is done, that it is stopping; a failed notice is logged,
	// not fatal: the node serves all the same.
	if err := cfg.Notify("READY=1\nSTATUS=serving on " + addr); err != nil {
		logger.Warn("sd_notify", "err", err)
	}
	stopNotice := context.AfterFunc(ctx, func() {
		if err := cfg.Notify("STOPPING=1"); err != nil {
			logger.Warn("sd_notify", "err", err)
		}
	})
	defer stopNotice()

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
