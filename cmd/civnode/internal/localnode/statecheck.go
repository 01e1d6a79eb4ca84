package localnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// stateCheckBatch is how many events CheckStateOfChain folds at a time.
const stateCheckBatch = 1024

// CheckStateOfChain derives the state tree of chain (a stopped node's or
// mirror's, verified) afresh and checks every state.committed in it
// against the root its events give (civnode verify --data-dir): it folds
// the chain into a scratch log of its own in a directory made under
// scratchParent, removed when it returns, so the data dir's read models are
// neither read nor changed. A chain with no commitment is not folded. It
// returns how many commitments it checked; one that differs is a
// *projections.StateMismatch.
func CheckStateOfChain(ctx context.Context, chain *eventlog.Log, scratchParent string, logger *slog.Logger, progress func(seq uint64)) (int, error) {
	if _, ok, err := chain.LastOfType(events.TypeStateCommitted, chain.Tip().Seq); err != nil || !ok {
		return 0, err
	}
	dir, err := os.MkdirTemp(scratchParent, ".state-check-")
	if err != nil {
		return 0, fmt.Errorf("a scratch directory for the state check: %w", err)
	}
	defer os.RemoveAll(dir)
	scratch, err := eventlog.Open(eventlog.Options{Dir: dir, PublicKey: chain.PublicKey(), Ingest: true,
		Models: projections.Folder{State: true}, Logger: logger})
	if err != nil {
		return 0, fmt.Errorf("open the scratch log of the state check: %w", err)
	}
	defer scratch.Close()
	batch := make([]*eventlog.Event, 0, stateCheckBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := scratch.Ingest(ctx, batch); err != nil {
			return fmt.Errorf("fold the chain for the state check: %w", err)
		}
		if progress != nil {
			progress(batch[len(batch)-1].Seq)
		}
		batch = batch[:0]
		return nil
	}
	tip := chain.Tip().Seq
	if err := chain.Scan(1, tip, func(ev *eventlog.Event) error {
		batch = append(batch, ev)
		if len(batch) == stateCheckBatch {
			return flush()
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return projections.CheckStateCommitments(ctx, scratch)
}
