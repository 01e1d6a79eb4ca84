package main

import (
	"context"
	"crypto/ed25519"
	"log/slog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/witness"
)

// startWitnessing makes the node's witness (always: GET /v1/witness serves its
// key, and a log it was not told to witness is answered 404) and, with
// --witness, starts submitting checkpoints to the witnesses until ctx is done;
// done is closed once the submitter has stopped (at once without one).
func startWitnessing(ctx context.Context, cfg serveConfig, dir datadir.Dir, key ed25519.PrivateKey, chain *eventlog.Log,
	st *stream.Server, logger *slog.Logger, done chan struct{}) (*witness.Witness, *witness.Submitter, error) {
	wkey, err := witness.DeriveKey(key)
	if err != nil {
		close(done)
		return nil, nil, err
	}
	wit, err := witness.New(witness.Options{Key: wkey, Name: witness.Name(chain.NodeDID()), Logs: cfg.witnessFor, StatePath: dir.WitnessPath()})
	if err != nil {
		close(done)
		return nil, nil, err
	}
	if len(cfg.witnessFor) > 0 {
		logger.Info("witnessing", "logs", len(cfg.witnessFor), "verifier_key", wit.VerifierKey())
	}
	if len(cfg.witnesses) == 0 {
		close(done)
		return wit, nil, nil
	}
	remotes := make([]witness.Remote, len(cfg.witnesses))
	for i, w := range cfg.witnesses {
		if remotes[i], err = witness.ParseRemote(w); err != nil { // checked by serveConfig.check
			close(done)
			return nil, nil, err
		}
	}
	wlog := logger.With("component", "witness")
	sub, err := witness.NewSubmitter(witness.SubmitterOptions{
		Log: chain, Witnesses: remotes, Quorum: cfg.witnessQuorum, StatePath: dir.CosignaturesPath(),
		Interval: stream.CheckpointInterval, Logger: wlog,
		OnWitnessed: func(size int64, note []byte) {
			st.PublishWitnessed(size, note)
			wlog.Info("witnessed checkpoint", "tree_size", size)
		},
	})
	if err != nil {
		close(done)
		return nil, nil, err
	}
	logger.Info("submitting checkpoints to witnesses", "witnesses", len(remotes), "quorum", cfg.witnessQuorum)
	go func() {
		defer close(done)
		sub.Run(ctx)
	}()
	return wit, sub, nil
}
