package main

import (
	"context"
	"crypto/ed25519"
	"log/slog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/projections"
)

// openCore opens the node in d through core.Open, the one wiring that serve,
// replay, the offline token commands and the tests share. A catch-up or rebuild
// of the read models at start is logged with its progress, as is the one-time
// build of the Merkle tree of a data dir from before it. hooks are the log's
// hooks serve sets (stream publication, metrics, a progress bar); the zero
// value has none.
func openCore(ctx context.Context, d datadir.Dir, key ed25519.PrivateKey, cfg core.Config, logger *slog.Logger, hooks logHooks) (*core.Core, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := eventlog.Options{OnRebuild: rebuildLogger(logger), OnCommit: hooks.onCommit, OnGroupCommit: hooks.onGroupCommit,
		OnTreeBuild: treeBuildProgress(logger, hooks.onTreeBuild), ModelCacheSize: hooks.modelCache, Ingest: hooks.ingest}
	opts.Dir, opts.Key, opts.Logger = d.DBPath(), key, logger
	c, err := core.Open(opts, cfg)
	if err != nil {
		return nil, d.OpenError(err)
	}
	skipped, err := c.Skipped()
	if err != nil {
		c.Close()
		return nil, err
	}
	for _, model := range projections.Models() {
		if n := skipped[model.Name]; n > 0 {
			logger.Warn("events a read model could not apply", "model", model.Name, "count", n)
		}
	}
	return c, nil
}

// serverOptions returns o with the log, the read models and the commands of
// the core c: the one mapping of a core onto the HTTP server's options, which
// serve and the tests that serve a core share. (cmd/core cannot hold it: the
// http package's tests import cmd/core, so it must not import http.)
func serverOptions(c *core.Core, o civhttp.Options) civhttp.Options {
	o.Log, o.Tokens = c.Log, c.Tokens
	o.Identity, o.Identities = c.Identity, c.Identities
	o.Mission, o.Missions = c.Mission, c.Missions
	o.Game, o.GameState = c.Game, c.GameState
	o.Servicenet, o.PaymentAccounts = c.Servicenet, c.PaymentAccounts
	return o
}

// logHooks are the eventlog.Options hooks and settings serve sets.
type logHooks struct {
	onCommit      func([]eventlog.Event) error
	onGroupCommit func(eventlog.GroupCommit)
	// onTreeBuild, if set, is told the tree build's progress besides the
	// log (serve's bar on a terminal).
	onTreeBuild eventlog.RebuildProgress
	// modelCache is eventlog.Options.ModelCacheSize (serve --model-cache);
	// 0: the default.
	modelCache int64
	// ingest opens a new store without a genesis event, for import to fill
	// from a bundle (eventlog.Options.Ingest).
	ingest bool
}

// treeBuildProgress logs the one-time build of the Merkle tree (a data dir
// from before it; eventlog/treebuild.go) as progressLogger does, and passes
// the progress on to also, if set.
func treeBuildProgress(logger *slog.Logger, also eventlog.RebuildProgress) eventlog.RebuildProgress {
	logged := progressLogger(logger, "building the merkle tree over the chain")
	return func(done, total uint64) {
		logged(done, total)
		if also != nil {
			also(done, total)
		}
	}
}

// rebuildLogger logs a catch-up or rebuild of the read models as
// progressLogger does.
func rebuildLogger(logger *slog.Logger) eventlog.RebuildProgress {
	return progressLogger(logger, "folding the chain into the read models")
}

// progressLogger logs msg with the seq reached about every 5 % of the way, so
// an operator watching a long start sees it move.
func progressLogger(logger *slog.Logger, msg string) eventlog.RebuildProgress {
	var step, next uint64
	return func(done, total uint64) {
		if step == 0 {
			step = max(total/20, 1)
			next = done
		}
		if done >= next || done == total {
			logger.Info(msg, "seq", done, "tip_seq", total)
			next = done + step
		}
	}
}

// openChain opens the event log of an existing node for a one-shot command
// (verify --data-dir, export, replay). It creates nothing: a dir without a node
// key or database is an error rather than a new node.
func openChain(d datadir.Dir, logger *slog.Logger) (*eventlog.Log, error) {
	key, err := d.ExistingNodeKey(logger)
	if err != nil {
		return nil, err
	}
	return d.OpenLog(key, logger, eventlog.Options{OnTreeBuild: treeBuildProgress(logger, nil)})
}

// openExistingCore opens an existing node's core for a one-shot command; it
// creates nothing (see openChain).
func openExistingCore(ctx context.Context, d datadir.Dir, logger *slog.Logger) (*core.Core, error) {
	key, err := d.ExistingNodeKey(logger)
	if err != nil {
		return nil, err
	}
	// One-shot commands decide nothing that a catalog or the governed subnets
	// rule; the built-in catalog will do.
	return openCore(ctx, d, key, core.Config{Keys: keystore(d)}, logger, logHooks{})
}

// keystore keeps the data dir's payment-account keys.
func keystore(d datadir.Dir) *servicenet.Keystore { return servicenet.NewKeystore(d.WalletsPath()) }
