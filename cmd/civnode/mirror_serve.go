package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/transparency"
)

// serveMirror is civnode serve --mirror-of URL: it follows the origin
// published at URL into the data dir as civnode mirror does and serves the
// chain read-only from the same process. The read models are folded from the
// verified chain as it is stored, and the stream publishes each stored group
// on the origin's subjects. The mirror's own owner token (control.token) and
// observer tokens authenticate readers as on a node; every write answers 403
// read_only_mirror (http/readonly.go). A problem with the source (a fork, a
// rollback, an event that does not verify) stops the process with exit
// status 1, as it stops civnode mirror, after the evidence is kept.
func (m *Main) serveMirror(ctx context.Context, cfg serveConfig, logger *slog.Logger) (err error) {
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
	mcfg := cfg.mirror
	mcfg.from = cfg.mirrorOf
	src, k, err := openMirrorSource(ctx, dir, mcfg)
	if err != nil {
		return err
	}
	defer src.Close()
	token, err := datadir.LoadOrCreateControlToken(dir.TokenPath(), logger)
	if err != nil {
		return err
	}
	st, err := stream.Start(stream.Options{
		NodeDID: k.DID, Listen: cfg.natsListen, LeafURL: cfg.natsLeaf, Logger: logger,
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
	metrics := civhttp.NewMetrics()
	node, err := core.Open(eventlog.Options{
		Dir: dir.DBPath(), PublicKey: k.PublicKey(), Logger: logger,
		OnRebuild: rebuildLogger(logger), OnCommit: st.Publish, OnGroupCommit: metrics.ObserveGroupCommit,
		ModelCacheSize: cfg.modelCache,
	}, core.Config{Catalog: cat, Governs: cfg.governs})
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
		err := followMirror(ctx, src, node.Log, dir, mcfg, false, func(rep transparency.Mirrored) {
			logger.Info("mirrored", "origin", k.Origin, "tree_size", rep.Head.Size, "events", rep.Events)
		})
		if err != nil {
			logger.Error("stopped following the origin", "err", err)
			stop()
		}
		followed <- err
	}()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	if sock := listenControlSocket(dir.SocketPath(), logger); sock != nil {
		ln = civhttp.MergeListeners(ln, sock)
	}
	srv := civhttp.New(serverOptions(node, civhttp.Options{
		OwnerToken:      token,
		Governs:         cfg.governs,
		Catalog:         cat,
		PageBytes:       cfg.pageBytes,
		ResponseBudget:  cfg.responseBudget,
		RateLimit:       cfg.httpRateLimit(),
		RateBurst:       cfg.rateBurst,
		MaxConns:        cfg.httpMaxConns(),
		MaxConnsPerAddr: cfg.httpMaxConnsPerAddr(),
		Logger:          logger,
		Stream:          st,
		Metrics:         metrics,
	}))
	logger.Info("serving a mirror", "addr", addr, "origin", k.Origin, "from", src.Via(), "data_dir", string(dir), "tip_seq", node.Log.Tip().Seq)
	if _, err := fmt.Fprintf(m.Stdout, "civnode listening on http://%s\n", addr); err != nil {
		ln.Close()
		return fmt.Errorf("print listening line: %w", err)
	}
	serveErr := srv.Serve(ctx, ln)
	if serveErr != nil && !errors.Is(serveErr, context.Canceled) {
		return serveErr
	}
	return nil
}
