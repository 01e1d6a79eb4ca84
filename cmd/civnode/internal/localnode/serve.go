package localnode

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/witness"
)

// Config is the node that OpenNode opens and Run runs: serve's settings,
// already checked and mapped onto the options of the packages they
// configure, and the surroundings the command gives it.
type Config struct {
	Dir     datadir.Dir
	Addr    string
	Catalog *catalog.Catalog
	// RegistryURL is the agent registry the node proxies; "": none.
	RegistryURL string
	// ModelCache is the read models' write-through cache, in bytes.
	ModelCache int64
	// TLS is the node's HTTPS, if any (serve --tls-cert); without it, plain
	// HTTP beyond loopback needs TLS.AllowPlainHTTP.
	TLS TLS
	// Mirror, if set, makes the node a read-only mirror of the origin at
	// this source (serve --mirror-of); nil: the node's own chain.
	Mirror *MirrorSource
	// HTTP holds the server's limits and Governs; OpenNode adds the core, the
	// owner token, the catalog, the stream, the metrics, the logger and the
	// snapshot hook.
	HTTP civhttp.Options
	// NATS holds the stream's listener, leaf link and limits; OpenNode adds
	// the node DID (a mirror's: the origin's), the peer hook and the logger.
	NATS stream.Options
	// Version, Commit and GoVersion are the build's (civnode_build_info,
	// node.started).
	Version, Commit, GoVersion string
	// Witnessing is who cosigns the node's checkpoints and whose it cosigns.
	Witnessing Witnessing
	// Published are the directories and URLs the node's chain is published
	// at (serve --published): the fork guard's sources.
	Published []string
	// Publish is where the node publishes its chain continuously (serve
	// --publish-dir); its Target "": nowhere.
	Publish Publishing
	// StateInterval is the least time between two state.committed events
	// (serve --state-interval); 0 is DefaultStateInterval.
	StateInterval time.Duration
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

// openOwn opens a node's own chain, writable: its key and control token
// (made on first start), NATS with the recorder of leaf links, the metrics,
// the registry client and the core, and the work beside the server: the peer
// recorder, the checkpoint pump and the witnessing.
func (n *Node) openOwn(ctx context.Context) error {
	cfg, logger, dir := n.cfg, n.logger, n.cfg.Dir
	key, err := dir.ServeNodeKey(logger)
	if err != nil {
		return err
	}
	if n.token, err = datadir.LoadOrCreateControlToken(dir.TokenPath(), logger); err != nil {
		return err
	}
	// Before the log: its OnCommit publishes on it. A leaf link that comes up
	// while the log opens is queued by peers and recorded once it is open.
	peers := newPeerRecorder(logger)
	nats := cfg.NATS
	nats.NodeDID, nats.OnPeer, nats.Logger = eventlog.DIDKey(key.Public().(ed25519.PublicKey)), peers.note, logger
	portTokens := newNATSTokens(n.token)
	nats.Authenticate = portTokens.check
	if n.stream, err = stream.Start(nats); err != nil {
		return err
	}
	logNATS(logger, n.stream.Status())
	if nats.TLSCertFile != "" {
		n.goBackground(func(ctx context.Context) { reloadNATSCertOnHUP(ctx, n.stream) })
	}
	// Before the log and the registry client, which report into it.
	n.metrics = civhttp.NewMetrics()
	if err := n.metrics.SetBuildInfo(cfg.Version, cfg.Commit, cfg.GoVersion); err != nil {
		return err
	}
	registry, err := openRegistry(dir, cfg.RegistryURL, key, logger, n.metrics.ObserveRegistry)
	if err != nil {
		return err
	}
	c, err := Open(ctx, dir, key, core.Config{Catalog: cfg.Catalog, Governs: cfg.HTTP.Governs,
		Keys: Keystore(dir), Registry: registry}, logger,
		Hooks{OnCommit: n.stream.Publish, OnGroupCommit: n.metrics.ObserveGroupCommit, OnTreeBuild: cfg.TreeBuildBar, ModelCache: cfg.ModelCache})
	var ce *eventlog.ChainError
	if errors.Is(err, eventlog.ErrCorrupt) {
		return fmt.Errorf("%w; the node will not start on a damaged store: restore the data dir from a backup", err)
	} else if errors.As(err, &ce) {
		return fmt.Errorf("%w; the node will not start on a chain that does not verify", err)
	}
	if err != nil {
		return err
	}
	n.core = c
	portTokens.service.Store(c.Tokens)
	chain := c.Log
	n.goBackground(func(ctx context.Context) { peers.record(ctx, commands.NewPeers(chain)) })
	n.goBackground(func(ctx context.Context) { n.stream.PublishCheckpoints(ctx, chain, stream.CheckpointInterval) })
	guard, err := n.openForkGuard(ctx, chain)
	if err != nil {
		return err
	}
	wcfg := cfg.Witnessing
	if cfg.Publish.Target != "" {
		// A target the chain does not extend, or another key's, holds the
		// node's writes as any such checkpoint does.
		n.cfg.Publish.OnRefused = guard.PublishRefused
		pub, err := n.openPublisher(chain, guard.Saw)
		if err != nil {
			return err
		}
		wcfg.Ceiling = pub.Ceiling
	}
	witnessed := make(chan struct{})
	n.waits = append(n.waits, witnessed)
	n.http.Witness, n.http.Witnesses, err = startWitnessing(n.bg, wcfg, dir, key, chain, n.stream, logger, guard.WitnessAhead, witnessed)
	if err != nil {
		return err
	}
	sc := &stateCommitter{chain: chain, interval: cmp.Or(cfg.StateInterval, DefaultStateInterval),
		logger: logger.With(logkey.Component, "state")}
	if sub := n.http.Witnesses; sub != nil {
		sc.witnessed = sub.Witnessed
	}
	n.goBackground(sc.run)
	return nil
}

// openForkGuard holds the chain's writes, checks it against every
// checkpoint of its key the node can know of (catching up from a published
// source where one holds the tail), and goes on watching beside the server
// (forkGuard). The first check runs here, so a node with nothing to wait for
// listens writable.
func (n *Node) openForkGuard(ctx context.Context, chain *eventlog.Log) (*forkGuard, error) {
	cfg, dir := n.cfg, n.cfg.Dir
	recovered, err := dir.Recovered()
	if err != nil {
		return nil, err
	}
	instance, err := dir.InstanceID()
	if err != nil {
		return nil, err
	}
	remotes := make([]witness.Remote, len(cfg.Witnessing.Witnesses))
	for i, w := range cfg.Witnessing.Witnesses {
		if remotes[i], err = witness.ParseRemote(w); err != nil { // checked by serve
			return nil, err
		}
	}
	g := newForkGuard(&forkGuard{chain: chain, dir: dir, logger: n.logger.With(logkey.Component, "fork_guard"),
		published: guardSources(cfg), witnesses: remotes, quorum: cfg.Witnessing.Quorum, recovered: recovered,
		startWait: cfg.Witnessing.StartWait, instance: instance,
		writable: func(ctx context.Context) error { return recordPromoted(ctx, chain, dir) }})
	n.http.ForkGuard = g.Note
	// Superseded once, superseded at every start: the catch-up that met
	// another instance's node.promoted is not run again.
	other, err := supersededAtOpen(chain, dir)
	if err != nil {
		return nil, err
	}
	if other != "" {
		g.hold(eventlog.Behind{Reason: heldSuperseded, Size: chain.TreeSize(), Tip: chain.TreeSize(), Seen: "node.promoted of instance " + other})
		g.setNote("another instance (%s) was promoted in this node's place: it appends nothing", other)
	}
	start := time.Now()
	settled := g.checkOnce(ctx, 0)
	n.goBackground(func(ctx context.Context) { g.run(ctx, start, settled) })
	return g, nil
}

// logNATS says whether the node opened a NATS port, and where its leaf link
// goes (without the URL's credentials).
func logNATS(logger *slog.Logger, st stream.Status) {
	if st.NATS.Listen == "" {
		logger.Info("nats in process only: no listener", logkey.ServerID, st.NATS.ServerID, logkey.Version, st.NATS.Version)
	} else {
		logger.Info("nats listening", logkey.Addr, st.NATS.Listen, logkey.ServerID, st.NATS.ServerID, logkey.Version, st.NATS.Version)
	}
	for _, l := range st.Leafs {
		logger.Info("nats joins a hub as a leaf node", logkey.Remote, l.Remote)
	}
}
