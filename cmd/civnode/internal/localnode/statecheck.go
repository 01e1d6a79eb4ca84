package localnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

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
}

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
	c := &ChainCheck{chain: chain}
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
// every signature is checked once.
func (c *ChainCheck) Verify(ctx context.Context, progress func(seq uint64)) (eventlog.VerifyReport, error) {
	if c.scratch == nil {
		return c.chain.Verify(ctx, progress)
	}
	return c.scratch.ImportChain(ctx, c.chain, progress)
}

// States checks every state.committed against the tree Verify folded and
// returns how many it checked; one that differs is a
// *projections.StateMismatch. It must follow a Verify that succeeded.
func (c *ChainCheck) States(ctx context.Context) (int, error) {
	if c.scratch == nil {
		return 0, nil
	}
	return projections.CheckStateCommitments(ctx, c.scratch)
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
