package localnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/transparency"
)

// MirrorSource is where a mirror's chain comes from and the key it must be
// signed with: civnode mirror's and serve --mirror-of's flags.
type MirrorSource struct {
	// From is the base URL of a published directory, or with Token of a
	// node's API.
	From, Token string
	// VerifierKey, if set, is the origin's note verifier key; else the one
	// the source serves is pinned on the first run.
	VerifierKey string
	// Interval is how often a follower looks for a new seal.
	Interval time.Duration
	// Witnesses, Quorum and MaxAge, when Witnesses are given, require the
	// source's tree to be witnessed (transparency.MirrorOptions).
	Witnesses []string
	Quorum    int
	MaxAge    time.Duration
}

// OpenMirrorSource makes the client of the source and pins the origin's key
// in dir on the first run; a later run requires the same key. A follower
// (not once) that must read the key from the source waits out a source that
// is down (retry), as FollowMirror does.
func OpenMirrorSource(ctx context.Context, logger *slog.Logger, dir datadir.Dir, src MirrorSource, once bool) (*transparency.Client, transparency.Key, error) {
	pinned, err := dir.OriginKey()
	if err != nil {
		return nil, transparency.Key{}, err
	}
	if pinned != "" && src.VerifierKey != "" && pinned != src.VerifierKey {
		return nil, transparency.Key{}, fmt.Errorf("%s holds the origin key %s, not --verifier-key %s; a mirror follows one origin",
			dir.OriginKeyPath(), pinned, src.VerifierKey)
	}
	c, err := transparency.NewObserverClient(src.From, src.Token)
	if err != nil {
		return nil, transparency.Key{}, err
	}
	vkey := pinned
	if vkey == "" {
		vkey = src.VerifierKey
	}
	var k transparency.Key
	r := retry{logger: logger, via: c.Via(), interval: src.Interval}
	for {
		k, err = transparency.MirrorKey(ctx, c, src.Token != "", vkey)
		if err == nil || once || !transparency.Transient(err) {
			break
		}
		if err = r.wait(ctx, err); err != nil {
			break
		}
	}
	if err != nil {
		c.Close()
		return nil, transparency.Key{}, err
	}
	if pinned == "" {
		if err := dir.PinOriginKey(k.VerifierKey); err != nil {
			c.Close()
			return nil, transparency.Key{}, err
		}
	}
	return c, k, nil
}

// FollowMirror runs transparency.Mirror once, or every src.Interval until
// ctx is done or a run fails, reporting each run that stored events (and,
// with once, the run whatever it did). A follower waits out a failure of the
// source that may pass (transparency.Transient: a connection refused or
// reset, a timeout, a 5xx or 429), logging each at warn, and goes on; any
// other failure, a problem with what the source served above all, ends it,
// as any failure ends a run with once.
func FollowMirror(ctx context.Context, logger *slog.Logger, c *transparency.Client, l *eventlog.Log, dir datadir.Dir, src MirrorSource, once bool, report func(transparency.Mirrored)) error {
	opts := transparency.MirrorOptions{URL: c.Base(), API: src.Token != "", Evidence: dir.EvidencePrefix(),
		Witnesses: src.Witnesses, Quorum: src.Quorum, MaxAge: src.MaxAge}
	r := retry{logger: logger, via: c.Via(), interval: src.Interval}
	for {
		rep, err := transparency.Mirror(ctx, c, l, opts)
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil && !once && transparency.Transient(err) {
			if r.wait(ctx, err) != nil {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("mirror %s: %w", c.Via(), err)
		}
		if r.attempt > 0 {
			logger.Info("the source answers again", logkey.From, c.Via(), logkey.FailedAttempts, r.attempt)
			r.attempt = 0
		}
		if once || rep.Events > 0 {
			report(rep)
		}
		if once {
			return nil
		}
		t := time.NewTimer(max(src.Interval, minInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// retry paces a follower's attempts after failures of its source that may
// pass: one warn line for each, with how many failed in a row and when the
// next attempt is.
type retry struct {
	logger   *slog.Logger
	via      string
	interval time.Duration
	attempt  int // failures in a row
}

// wait logs err and waits for the next attempt (transparency.RetryDelay);
// it returns ctx's error if ctx is done first.
func (r *retry) wait(ctx context.Context, err error) error {
	r.attempt++
	d := transparency.RetryDelay(max(r.interval, minInterval), r.attempt)
	r.logger.Warn("the source failed; retrying", logkey.From, r.via, logkey.Attempt, r.attempt, logkey.RetryIn, d.Round(time.Millisecond), logkey.Err, err)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// minInterval is the shortest interval a follower polls at.
const minInterval = 100 * time.Millisecond

// openMirror opens a mirror (civnode serve --mirror-of): it follows the
// origin at cfg.Mirror into cfg.Dir as civnode mirror does, and the node
// serves the chain read-only from the same process. The read models are
// folded from the verified chain as it is stored, and the stream publishes
// each stored group on the origin's subjects. The mirror's own owner token
// (control.token) and observer tokens authenticate readers as on a node;
// every write answers 403 read_only_mirror. A failure of the source that may
// pass (a connection refused, a 503) is waited out while the node serves
// what it holds; a problem with the source (a fork, a rollback, an event
// that does not verify) stops the node, after the evidence is kept.
func (n *Node) openMirror(ctx context.Context) error {
	cfg, logger, dir, src := n.cfg, n.logger, n.cfg.Dir, *n.cfg.Mirror
	c, k, err := OpenMirrorSource(ctx, logger, dir, src, false)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopped while the source was down
		}
		return err
	}
	n.source, n.origin = c, k
	if n.token, err = datadir.LoadOrCreateControlToken(dir.TokenPath(), logger); err != nil {
		return err
	}
	nats := cfg.NATS
	nats.NodeDID, nats.Logger = k.DID, logger
	if n.stream, err = stream.Start(nats); err != nil {
		return err
	}
	n.metrics = civhttp.NewMetrics()
	node, err := core.Open(eventlog.Options{
		Dir: dir.DBPath(), PublicKey: k.PublicKey(), Logger: logger,
		OnRebuild: rebuildLogger(logger), OnCommit: n.stream.Publish, OnGroupCommit: n.metrics.ObserveGroupCommit,
		ModelCacheSize: cfg.ModelCache,
	}, core.Config{Catalog: cfg.Catalog, Governs: cfg.HTTP.Governs})
	if err != nil {
		return dir.OpenError(err)
	}
	n.core = node
	n.goBackground(func(ctx context.Context) { n.stream.PublishCheckpoints(ctx, node.Log, stream.CheckpointInterval) })
	n.followed = make(chan error, 1)
	go func() {
		err := FollowMirror(n.bg, logger, c, node.Log, dir, src, false, func(rep transparency.Mirrored) {
			logger.Info("mirrored", logkey.Origin, k.Origin, logkey.TreeSize, rep.Head.Size, logkey.Events, rep.Events)
		})
		if err != nil {
			logger.Error("stopped following the origin", logkey.Err, err)
			n.stopBg()
		}
		n.followed <- err
	}()
	return nil
}
