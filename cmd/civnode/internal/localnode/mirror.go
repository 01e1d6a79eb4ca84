package localnode

import (
	"context"
	"errors"
	"fmt"
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
// in dir on the first run; a later run requires the same key.
func OpenMirrorSource(ctx context.Context, dir datadir.Dir, src MirrorSource) (*transparency.Client, transparency.Key, error) {
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
	k, err := transparency.MirrorKey(ctx, c, src.Token != "", vkey)
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
// with once, the run whatever it did).
func FollowMirror(ctx context.Context, c *transparency.Client, l *eventlog.Log, dir datadir.Dir, src MirrorSource, once bool, report func(transparency.Mirrored)) error {
	opts := transparency.MirrorOptions{URL: c.Base(), API: src.Token != "", Evidence: dir.EvidencePrefix(),
		Witnesses: src.Witnesses, Quorum: src.Quorum, MaxAge: src.MaxAge}
	for {
		rep, err := transparency.Mirror(ctx, c, l, opts)
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mirror %s: %w", c.Via(), err)
		}
		if once || rep.Events > 0 {
			report(rep)
		}
		if once {
			return nil
		}
		t := time.NewTimer(max(src.Interval, 100*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// ServeMirror is civnode serve --mirror-of: it follows the origin at src
// into cfg.Dir as civnode mirror does and serves the chain read-only from
// the same process. The read models are folded from the verified chain as it
// is stored, and the stream publishes each stored group on the origin's
// subjects. The mirror's own owner token (control.token) and observer tokens
// authenticate readers as on a node; every write answers 403
// read_only_mirror. A problem with the source (a fork, a rollback, an event
// that does not verify) stops the process, after the evidence is kept.
func ServeMirror(ctx context.Context, cfg Config, src MirrorSource) (err error) {
	logger, dir := cfg.Logger, cfg.Dir
	if err := dir.Create(logger); err != nil {
		return err
	}
	c, k, err := OpenMirrorSource(ctx, dir, src)
	if err != nil {
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
		err := FollowMirror(ctx, c, node.Log, dir, src, false, func(rep transparency.Mirrored) {
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
