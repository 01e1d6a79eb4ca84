package localnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
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
			logger.Info("the source answers again", "from", c.Via(), "failed_attempts", r.attempt)
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
	r.logger.Warn("the source failed; retrying", "from", r.via, "attempt", r.attempt, "retry_in", d.Round(time.Millisecond), "err", err)
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

// ServeMirror is civnode serve --mirror-of: it follows the origin at src
// into cfg.Dir as civnode mirror does and serves the chain read-only from
// the same process. The read models are folded from the verified chain as it
// is stored, and the stream publishes each stored group on the origin's
// subjects. The mirror's own owner token (control.token) and observer tokens
// authenticate readers as on a node; every write answers 403
// read_only_mirror. A failure of the source that may pass (a connection
// refused, a 503) is waited out while the node serves what it holds; a
// problem with the source (a fork, a rollback, an event that does not
// verify) stops the process, after the evidence is kept.
func ServeMirror(ctx context.Context, cfg Config, src MirrorSource) (err error) {
	logger, dir := cfg.Logger, cfg.Dir
	if err := dir.Create(logger); err != nil {
		return err
	}
	c, k, err := OpenMirrorSource(ctx, logger, dir, src, false)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while the source was down
		}
		return err
	}
	defer c.Close()
	token, err := datadir.LoadOrCreateControlToken(dir.TokenPath(), logger)
	if err != nil {
		return err
	}
	nats := cfg.NATS
	nats.NodeDID, nats.Logger = k.DID, logger
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
	metrics := civhttp.NewMetrics()
	node, err := core.Open(eventlog.Options{
		Dir: dir.DBPath(), PublicKey: k.PublicKey(), Logger: logger,
		OnRebuild: rebuildLogger(logger), OnCommit: st.Publish, OnGroupCommit: metrics.ObserveGroupCommit,
		ModelCacheSize: cfg.ModelCache,
	}, core.Config{Catalog: cfg.Catalog, Governs: cfg.HTTP.Governs})
	if err != nil {
		return dir.OpenError(err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	followed := make(chan error, 1)
	checkpointsDone := make(chan struct{})
	defer func() {
		stop()
		<-checkpointsDone
		if ferr := <-followed; ferr != nil && err == nil {
			err = ferr
		}
		if cerr := closeStream(); cerr != nil && err == nil {
			err = fmt.Errorf("close nats: %w", cerr)
		}
		if cerr := node.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	go func() {
		defer close(checkpointsDone)
		st.PublishCheckpoints(ctx, node.Log, stream.CheckpointInterval)
	}()
	go func() {
		err := FollowMirror(ctx, logger, c, node.Log, dir, src, false, func(rep transparency.Mirrored) {
			logger.Info("mirrored", "origin", k.Origin, "tree_size", rep.Head.Size, "events", rep.Events)
		})
		if err != nil {
			logger.Error("stopped following the origin", "err", err)
			stop()
		}
		followed <- err
	}()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	if sock := listenControlSocket(dir.SocketPath(), logger); sock != nil {
		ln = civhttp.MergeListeners(ln, sock)
	}
	opts := cfg.HTTP
	opts.OwnerToken, opts.Catalog, opts.Logger, opts.Stream, opts.Metrics = token, cfg.Catalog, logger, st, metrics
	// civnode backup of the running mirror, as of a node (docs/mirrors.md).
	opts.Snapshot = func(ctx context.Context) (civhttp.Snapshot, error) {
		snap, err := backup.Take(ctx, node.Log, string(dir), time.Now())
		return civhttp.Snapshot{Dir: snap.Dir, Backup: snap.Backup}, err
	}
	srv := civhttp.New(ServerOptions(node, opts))
	logger.Info("serving a mirror", "addr", addr, "origin", k.Origin, "from", c.Via(), "data_dir", string(dir), "tip_seq", node.Log.Tip().Seq)
	if err := cfg.Listening(addr); err != nil {
		ln.Close()
		return err
	}
	serveErr := srv.Serve(ctx, ln)
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) {
		return serveErr
	}
	return nil
}
