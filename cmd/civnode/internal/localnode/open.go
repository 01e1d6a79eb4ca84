package localnode

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
)

// Open opens the node in d through core.Open, the one wiring that serve,
// replay, the offline token commands and the tests share. A catch-up or rebuild
// of the read models at start is logged with its progress, as is the one-time
// build of the Merkle tree of a data dir from before it. hooks are the log's
// hooks serve sets (stream publication, metrics, a progress bar); the zero
// value has none.
func Open(ctx context.Context, d datadir.Dir, key ed25519.PrivateKey, cfg core.Config, logger *slog.Logger, hooks Hooks) (*core.Core, error) {
	return openCore(ctx, d, datadir.ChainKey{Node: key}, cfg, logger, hooks)
}

// openCore is Open with a node's key or a mirror's origin key.
func openCore(ctx context.Context, d datadir.Dir, key datadir.ChainKey, cfg core.Config, logger *slog.Logger, hooks Hooks) (*core.Core, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := eventlog.Options{OnRebuild: rebuildLogger(logger), OnCommit: hooks.OnCommit, OnGroupCommit: hooks.OnGroupCommit,
		OnTreeBuild: treeBuildProgress(logger, hooks.OnTreeBuild), ModelCacheSize: hooks.ModelCache, Ingest: hooks.Ingest}
	opts.Dir, opts.Logger = d.DBPath(), logger
	key.Apply(&opts)
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
			logger.Warn("events a read model could not apply", logkey.Model, model.Name, logkey.Count, n)
		}
	}
	return c, nil
}

// ServerOptions returns o with the log, the read models and the commands of
// the core c: the one mapping of a core onto the HTTP server's options, which
// serve and the tests that serve a core share. (cmd/core cannot hold it: the
// http package's tests import cmd/core, so it must not import http.)
func ServerOptions(c *core.Core, o civhttp.Options) civhttp.Options {
	o.Log, o.Tokens = c.Log, c.Tokens
	o.Identity, o.Identities = c.Identity, c.Identities
	o.Mission, o.Missions = c.Mission, c.Missions
	o.Game, o.GameState = c.Game, c.GameState
	o.Servicenet, o.PaymentAccounts = c.Servicenet, c.PaymentAccounts
	return o
}

// Hooks are the eventlog.Options hooks and settings serve and import set.
type Hooks struct {
	OnCommit      func([]eventlog.Event) error
	OnGroupCommit func(eventlog.GroupCommit)
	// OnTreeBuild, if set, is told the tree build's progress besides the
	// log (serve's bar on a terminal).
	OnTreeBuild eventlog.RebuildProgress
	// ModelCache is eventlog.Options.ModelCacheSize (serve --model-cache);
	// 0: the default.
	ModelCache int64
	// Ingest opens a new store without a genesis event, for import to fill
	// from a bundle (eventlog.Options.Ingest).
	Ingest bool
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
// an operator watching a long start sees it move, and at most a line a
// second, so a short start logs next to nothing.
func progressLogger(logger *slog.Logger, msg string) eventlog.RebuildProgress {
	return progressLoggerAt(logger, msg, time.Now)
}

// progressLoggerAt is progressLogger reading the time from now. A line
// waits for both its 5 % step and a second since the start or the line
// before it.
func progressLoggerAt(logger *slog.Logger, msg string, now func() time.Time) eventlog.RebuildProgress {
	var step, next uint64
	var last time.Time
	return func(done, total uint64) {
		if step == 0 {
			step = max(total/20, 1)
			next = done
			last = now()
		}
		if done < next {
			return
		}
		if t := now(); t.Sub(last) >= time.Second {
			logger.Info(msg, logkey.Seq, done, logkey.TipSeq, total)
			next, last = done+step, t
		}
	}
}

// OpenChain opens the event log of an existing node for a one-shot command
// (verify --data-dir, export, replay). It creates nothing: a dir without a node
// key or database is an error rather than a new node. A mirror's data dir
// opens with its pinned origin key (datadir.Dir.ExistingChainKey).
func OpenChain(d datadir.Dir, logger *slog.Logger) (*eventlog.Log, error) {
	key, err := d.ExistingChainKey(logger)
	if err != nil {
		return nil, err
	}
	return d.OpenChainLog(key, logger, eventlog.Options{OnTreeBuild: treeBuildProgress(logger, nil)})
}

// OpenExisting opens an existing node's core, or a mirror's, for a one-shot
// command; it creates nothing (see OpenChain).
func OpenExisting(ctx context.Context, d datadir.Dir, logger *slog.Logger) (*core.Core, error) {
	key, err := d.ExistingChainKey(logger)
	if err != nil {
		return nil, err
	}
	// One-shot commands decide nothing that a catalog or the governed subnets
	// rule; the built-in catalog will do.
	return openCore(ctx, d, key, core.Config{Keys: Keystore(d)}, logger, Hooks{})
}

// Keystore keeps the data dir's payment-account keys.
func Keystore(d datadir.Dir) *servicenet.Keystore { return servicenet.NewKeystore(d.WalletsPath()) }
