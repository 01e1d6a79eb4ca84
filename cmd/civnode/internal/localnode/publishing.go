package localnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/transparency"
)

// DefaultPublishInterval is how often a node publishing continuously
// (serve --publish-dir) publishes what it appended since: the recovery
// point of a node whose disk is lost (docs/operations.md).
const DefaultPublishInterval = time.Second

// finalPublishTimeout bounds the publish a stopping node makes of its last
// events (node.stopped among them).
const finalPublishTimeout = 30 * time.Second

// Publishing is serve's --publish-dir and --publish-interval: where the
// node publishes its chain from inside itself, as transparency publish
// does, and how often.
type Publishing struct {
	// Target is a directory or s3://BUCKET/PREFIX; "": the node does not
	// publish.
	Target string
	// Interval is the time between two publishes; 0 is
	// DefaultPublishInterval.
	Interval time.Duration
	// Getenv reads an S3 target's settings (AWS_ENDPOINT_URL, the
	// credentials, the region).
	Getenv func(string) string
	// OnPublished, if set, is told of each publish run, with the times it
	// started and ended (for the measure of the recovery point).
	OnPublished func(p transparency.Published, started, ended time.Time)
	// OnRefused, if set, is told why the target refused the node's tree
	// (transparency.ErrPublishRefused) when publishing stops on it.
	OnRefused func(err error)
}

// publisher publishes the node's chain to a target every interval, in
// Publish's crash-safe order. With witnesses it publishes the tiles and
// bundles of the whole tree, but the checkpoint and seal only of the newest
// witnessed tree, and it bounds what the submitter submits (ceiling) to the
// tree whose tiles and bundles are published: whatever a witness cosigns
// can be fetched and verified from the target.
type publisher struct {
	cfg       Publishing
	target    transparency.Target
	src       transparency.Source
	chain     *eventlog.Log
	witnessed bool
	key       transparency.Key
	logger    *slog.Logger
	// ahead is the fork guard's Saw: the target holds a larger tree.
	ahead func(where string, size int64)

	// tiled is the size of the tree whose tiles and bundles are in the
	// target, written by this process: the submitter's ceiling.
	tiled atomic.Int64
	// checkpointed is the size of the tree of the published checkpoint.
	checkpointed int64
	// witnessedSize is the size of the witnessed checkpoint the last run
	// saw, so a newer one is published without a new event.
	witnessedSize int64
}

// newPublisher opens cfg's target; src is the node's own log, with its
// witnessed checkpoint when it has witnesses.
func newPublisher(cfg Publishing, chain *eventlog.Log, src transparency.Source, witnessed bool, logger *slog.Logger) (*publisher, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	t, err := transparency.OpenTarget(cfg.Target, getenv)
	if err != nil {
		return nil, err
	}
	k, err := transparency.ParseKey(chain.VerifierKey())
	if err != nil {
		return nil, err
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultPublishInterval
	}
	return &publisher{cfg: cfg, target: t, src: src, chain: chain, witnessed: witnessed, key: k,
		logger: logger.With(logkey.Component, "publish", logkey.Target, t.Where(""))}, nil
}

// Ceiling is witness.SubmitterOptions.Ceiling: the tree whose tiles and
// bundles are published, 0 before the first publish.
func (p *publisher) Ceiling() int64 { return p.tiled.Load() }

// run publishes every interval until ctx is done, then once more, so that
// the events of the node's last moments (node.stopped) are published too.
// While the fork guard holds the log's writes it publishes nothing: a node
// behind its published tree catches up from it first. A target the chain
// does not extend stops the publishing for good (it is logged); any other
// failure is retried at the next tick. A target that holds a larger tree
// of the chain is the fork guard's news (ahead): the node appends nothing
// until it holds that tree, and publishing resumes once it does (a fork
// then stops it for good).
func (p *publisher) run(ctx context.Context) {
	p.logger.Info("publishing continuously", logkey.Interval, p.cfg.Interval.String(), logkey.WitnessedOnly, p.witnessed)
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	failing := false
	behind := int64(0) // the target's larger tree, while the chain lacks it
	for {
		select {
		case <-ctx.Done():
			if p.chain.Held() == nil {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalPublishTimeout)
				err := p.once(fctx)
				cancel()
				if err != nil {
					p.logger.Warn("the last publish before stopping failed", logkey.Err, err)
				}
			}
			return
		case <-tick.C:
		}
		if p.chain.Held() != nil || p.chain.TreeSize() < behind {
			continue
		}
		behind = 0
		err := p.once(ctx)
		switch {
		case err == nil:
			if failing {
				p.logger.Info("publishing again", logkey.TreeSize, p.tiled.Load())
			}
			failing = false
		case ctx.Err() != nil:
		case errors.Is(err, transparency.ErrPublishRefused) && p.targetSize(ctx) > p.chain.TreeSize():
			behind = p.targetSize(ctx)
			p.logger.Error("publishing paused: the target holds a larger tree than the node's chain; nothing was overwritten", logkey.TreeSize, behind, logkey.Err, err)
			if p.ahead != nil {
				p.ahead(p.target.Where(""), behind)
			}
		case errors.Is(err, transparency.ErrPublishRefused):
			p.logger.Error("publishing stopped: the target holds what the node's chain does not extend; nothing was overwritten", logkey.Err, err)
			if p.cfg.OnRefused != nil {
				p.cfg.OnRefused(err)
			}
			return
		default:
			if !failing {
				p.logger.Warn("publish failed; retrying every interval", logkey.Err, err)
			}
			failing = true
		}
	}
}

// targetSize is the size of the tree of the checkpoint in the target,
// signed by the node's key; 0 when there is none or it cannot be read.
func (p *publisher) targetSize(ctx context.Context) int64 {
	b, err := p.target.Read(ctx, transparency.CheckpointFile)
	if err != nil || b == nil {
		return 0
	}
	h, err := p.key.OpenCheckpoint(b)
	if err != nil {
		return 0
	}
	return h.Size
}

// once publishes if the chain grew, or a newer tree was witnessed, since
// the last run.
func (p *publisher) once(ctx context.Context) error {
	size := p.chain.TreeSize()
	tiled := p.tiled.Load()
	w := int64(0)
	if p.witnessed {
		wb, err := p.src.Witnessed(ctx)
		if err != nil {
			return err
		}
		if wb != nil {
			h, err := p.key.OpenCheckpoint(wb)
			if err != nil {
				return fmt.Errorf("the node's witnessed checkpoint: %w", err)
			}
			w = h.Size
		}
	}
	if tiled > 0 && size == tiled && w == p.witnessedSize {
		return nil
	}
	started := time.Now()
	res, err := transparency.PublishTo(ctx, p.src, p.target, transparency.PublishOptions{Done: tiled, WitnessedOnly: p.witnessed})
	if err != nil {
		return err
	}
	p.tiled.Store(res.Tiles.Size)
	p.witnessedSize = w
	if res.Head.Size != p.checkpointed || res.CheckpointWritten {
		p.logger.Debug("published", logkey.TreeSize, res.Tiles.Size, logkey.CheckpointSize, res.Head.Size)
	}
	p.checkpointed = res.Head.Size
	if p.cfg.OnPublished != nil {
		p.cfg.OnPublished(res, started, time.Now())
	}
	return nil
}

// openPublisher starts publishing the node's chain to cfg.Publish's target
// beside the server (publisher.run).
func (n *Node) openPublisher(chain *eventlog.Log, ahead func(where string, size int64)) (*publisher, error) {
	cfg, dir := n.cfg, n.cfg.Dir
	witnessed := len(cfg.Witnessing.Witnesses) > 0
	src := transparency.LogSource(chain, string(dir))
	if witnessed {
		src = transparency.WitnessedLogSource(chain, string(dir), dir.CosignaturesPath())
	}
	p, err := newPublisher(cfg.Publish, chain, src, witnessed, n.logger)
	if err != nil {
		return nil, err
	}
	p.ahead = ahead
	n.goBackground(p.run)
	return p, nil
}

// guardSources are the fork guard's published sources: serve --published,
// and the --publish-dir directory once it holds a checkpoint (before, it
// holds nothing to be behind, and is no source that does not answer). A
// bucket is read by the publisher alone, which refuses a tree the chain
// does not extend.
func guardSources(cfg Config) []string {
	t := cfg.Publish.Target
	if t == "" || transparency.IsS3(t) {
		return cfg.Published
	}
	if _, err := os.Stat(filepath.Join(t, transparency.CheckpointFile)); err != nil {
		return cfg.Published
	}
	return append(slices.Clone(cfg.Published), t)
}
