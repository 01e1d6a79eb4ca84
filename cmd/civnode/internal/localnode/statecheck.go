package localnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// ChainCheck verifies a stopped node's or mirror's chain and derives its
// state tree afresh, to check every state.committed in it against the root
// its events give (civnode verify --data-dir). The tree is derived in a
// scratch log of its own, so the data dir's read models are neither read nor
// changed; a chain with no commitment needs none.
type ChainCheck struct {
	chain   *eventlog.Log
	dir     string
	scratch *eventlog.Log
	// checked counts the commitments the check beside Verify's import
	// found equal; ended is what stopped it other than the import's end:
	// a *projections.StateMismatch, or a failure to read the scratch log.
	checked int
	ended   error
	// pause is statePause, shorter in tests.
	pause time.Duration
}

// statePause is how long the check beside the import waits between its
// passes over the commitments imported since the last: a node commits at
// most once a second (serve --state-interval), so a pass finds one or two.
const statePause = 250 * time.Millisecond

// scratchPattern names the scratch directories of state checks.
const scratchPattern = ".state-check-*"

// OpenChainCheck readies the check of chain, with a scratch directory made
// under scratchParent when the chain holds a commitment; Close removes it.
// A check killed before its Close left its directory behind, which this one
// removes first: the caller holds the data dir's lock, so no other check is
// using it.
func OpenChainCheck(chain *eventlog.Log, scratchParent string, logger *slog.Logger) (*ChainCheck, error) {
	left, err := filepath.Glob(filepath.Join(scratchParent, scratchPattern))
	if err != nil {
		return nil, err
	}
	for _, d := range left {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("remove the scratch directory of an earlier state check: %w", err)
		}
	}
	c := &ChainCheck{chain: chain, pause: statePause}
	if _, ok, err := chain.LastOfType(events.TypeStateCommitted, chain.Tip().Seq); err != nil || !ok {
		return c, err
	}
	dir, err := os.MkdirTemp(scratchParent, scratchPattern)
	if err != nil {
		return nil, fmt.Errorf("a scratch directory for the state check: %w", err)
	}
	scratch, err := eventlog.Open(eventlog.Options{Dir: dir, PublicKey: chain.PublicKey(), Ingest: true,
		Models: projections.Folder{State: true}, Logger: logger})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("open the scratch log of the state check: %w", err)
	}
	c.dir, c.scratch = dir, scratch
	return c, nil
}

// Verify checks the chain as eventlog's Verify does. With a scratch log it
// folds each event into it as the event verifies, in the same pass, so that
// every signature is checked once; beside that import, the commitments
// already in the scratch log are checked as they arrive (a commitment comes
// after the events it commits to, whose folds are durable with it), on the
// time the import leaves a core idle. What that check finds is States'.
func (c *ChainCheck) Verify(ctx context.Context, progress func(seq uint64)) (eventlog.VerifyReport, error) {
	if c.scratch == nil {
		return c.chain.Verify(ctx, progress)
	}
	alongCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.checked, c.ended = c.checkAlong(alongCtx)
	}()
	rep, err := c.scratch.ImportChain(ctx, c.chain, progress)
	stop()
	<-done
	return rep, err
}

// checkAlong checks the scratch log's commitments until ctx is done or one
// fails, a pass every c.pause, and returns how many it found equal.
func (c *ChainCheck) checkAlong(ctx context.Context) (int, error) {
	total := 0
	t := time.NewTicker(c.pause)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return total, nil
		case <-t.C:
		}
		n, err := projections.CheckStateCommitments(ctx, c.scratch)
		total += n
		if err != nil && ctx.Err() == nil {
			return total, err
		}
	}
}

// States checks every state.committed against the tree Verify folded and
// returns how many it checked; one that differs is a
// *projections.StateMismatch. It must follow a Verify that succeeded.
func (c *ChainCheck) States(ctx context.Context) (int, error) {
	if c.scratch == nil {
		return 0, nil
	}
	if c.ended != nil {
		return c.checked, c.ended
	}
	n, err := projections.CheckStateCommitments(ctx, c.scratch)
	return c.checked + n, err
}

// Close closes and removes the scratch log.
func (c *ChainCheck) Close() error {
	if c.scratch == nil {
		return nil
	}
	err := c.scratch.Close()
	if rerr := os.RemoveAll(c.dir); err == nil {
		err = rerr
	}
	return err
}
