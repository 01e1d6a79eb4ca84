package localnode

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/witness"
)

// Witnessing is serve's --witness, --witness-quorum and --witness-for:
// the witnesses (VKEY@URL, checked) that cosign the node's checkpoints, how
// many make one witnessed, and the verifier keys of the logs this node
// witnesses (docs/transparency.md, Witnessing).
type Witnessing struct {
	Witnesses []string
	Quorum    int
	For       []string
	// StartWait bounds the fork guard's wait for the witnesses at a start
	// that was not a recovery; 0 is DefaultWitnessStartWait.
	StartWait time.Duration
	// Ceiling, if set, bounds the tree submitted to the witnesses to the
	// one published (witness.SubmitterOptions.Ceiling).
	Ceiling func() int64
}

// startWitnessing makes the node's witness (always: GET /v1/witness serves its
// key, and a log it was not told to witness is answered 404) and, with
// --witness, starts submitting checkpoints to the witnesses until ctx is done;
// done is closed once the submitter has stopped (at once without one).
func startWitnessing(ctx context.Context, cfg Witnessing, dir datadir.Dir, key ed25519.PrivateKey, chain *eventlog.Log,
	st *stream.Server, logger *slog.Logger, ahead func(witness string, size int64), done chan struct{}) (*witness.Witness, *witness.Submitter, error) {
	wkey, err := witness.DeriveKey(key)
	if err != nil {
		close(done)
		return nil, nil, err
	}
	wit, err := witness.New(witness.Options{Key: wkey, Name: witness.Name(chain.NodeDID()), Logs: cfg.For, StatePath: dir.WitnessPath()})
	if err != nil {
		close(done)
		return nil, nil, err
	}
	if len(cfg.For) > 0 {
		logger.Info("witnessing", logkey.Logs, len(cfg.For), logkey.VerifierKey, wit.VerifierKey())
	}
	if len(cfg.Witnesses) == 0 {
		close(done)
		return wit, nil, nil
	}
	remotes := make([]witness.Remote, len(cfg.Witnesses))
	for i, w := range cfg.Witnesses {
		if remotes[i], err = witness.ParseRemote(w); err != nil { // checked by serve
			close(done)
			return nil, nil, err
		}
	}
	wlog := logger.With(logkey.Component, "witness")
	sub, err := witness.NewSubmitter(witness.SubmitterOptions{
		Log: chain, Witnesses: remotes, Quorum: cfg.Quorum, StatePath: dir.CosignaturesPath(),
		Interval: stream.CheckpointInterval, Logger: wlog, OnAhead: ahead, Ceiling: cfg.Ceiling,
		OnWitnessed: func(size int64, note []byte) {
			st.PublishWitnessed(size, note)
			wlog.Info("witnessed checkpoint", logkey.TreeSize, size)
		},
	})
	if err != nil {
		close(done)
		return nil, nil, err
	}
	logger.Info("submitting checkpoints to witnesses", logkey.Witnesses, len(remotes), logkey.Quorum, cfg.Quorum)
	go func() {
		defer close(done)
		sub.Run(ctx)
	}()
	return wit, sub, nil
}
