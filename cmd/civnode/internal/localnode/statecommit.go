package localnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/witness"
)

// DefaultStateInterval is serve's --state-interval: the least time between
// two state.committed events.
const DefaultStateInterval = time.Second

// stateCommitter keeps the node's commitment to its state map
// (docs/state-proofs.md): every interval, when the state changed, it brings
// the state tree up to the newest durable seq, appends state.committed with
// the root, waits until the checkpoint proofs are given against covers the
// event (the witnessed one, with witnesses), and only then writes the tree
// through that seq. Until then the tree and its values stay at the previous
// commitment, which that checkpoint already covers, so a proof is always of
// a commitment the checkpoint it comes with includes. All of it runs beside
// the server, never on a write's path.
type stateCommitter struct {
	chain    *eventlog.Log
	interval time.Duration
	// witnessed is the newest witnessed checkpoint; nil without witnesses,
	// when the node's own checkpoint covers every durable event at once.
	witnessed func() *witness.Witnessed
	logger    *slog.Logger
}

// run commits until ctx is done. A round that fails is logged and tried
// again at the next tick; a write the fork guard holds is not a failure.
func (c *stateCommitter) run(ctx context.Context) {
	if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
		c.logger.Error("state tree: reconciling with the chain's commitments failed", logkey.Err, err)
	}
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.round(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, eventlog.ErrBehindPublished) {
			c.logger.Warn("state commitment failed; trying again", logkey.Err, err)
		}
	}
}

// round brings the tree to the newest durable seq and commits to it when
// its root changed.
func (c *stateCommitter) round(ctx context.Context) error {
	_, _, err := projections.CommitState(c.chain, func(s projections.StateCommit) (uint64, error) {
		seq, err := c.appendCommitment(ctx, s)
		if err != nil {
			return 0, err
		}
		return seq, c.waitCovered(ctx, seq)
	})
	return err
}

// reconcile finishes what a stop cut short: a state.committed in the chain
// past the tree (the node stopped before it wrote the tree) is recomputed
// and checked, and a tree past the chain's last commitment (it stopped
// before the append) is committed to.
func (c *stateCommitter) reconcile(ctx context.Context) error {
	last, err := projections.LastStateCommit(c.chain)
	if err != nil {
		return err
	}
	ev, p, ok, err := newestCommitment(c.chain)
	if err != nil {
		return err
	}
	switch {
	case ok && p.ThroughSeq > last.ThroughSeq:
		r, err := projections.PrepareState(c.chain, p.ThroughSeq)
		if err != nil {
			return err
		}
		defer r.Close()
		if got := r.Root.String(); got != p.StateRoot || r.Entries != p.Entries {
			// The chain signs a root its own folds do not give: a defect to
			// report, never to paper over. The tree is kept, unsigned, and the
			// next round commits to the right one.
			c.logger.Error("state tree: the chain's state.committed differs from the root its events give",
				logkey.Seq, ev.Seq, logkey.StateRoot, p.StateRoot, logkey.StateRootDerived, got)
			return r.Commit(0)
		}
		return r.Commit(ev.Seq)
	case last.ThroughSeq > 0 && last.CommitmentSeq == 0 && (!ok || p.ThroughSeq < last.ThroughSeq):
		seq, err := c.appendCommitment(ctx, last)
		if err != nil {
			return err
		}
		if err := c.waitCovered(ctx, seq); err != nil {
			return err
		}
		last.CommitmentSeq = seq
		return projections.RecordStateCommitment(c.chain, last)
	}
	return nil
}

func (c *stateCommitter) appendCommitment(ctx context.Context, s projections.StateCommit) (uint64, error) {
	evs, err := c.chain.Append(ctx, eventlog.Draft{Type: events.TypeStateCommitted, Payload: events.StateCommitted{
		ThroughSeq: s.ThroughSeq, StateRoot: s.Root.String(), Entries: s.Entries}})
	if err != nil {
		return 0, fmt.Errorf("append %s: %w", events.TypeStateCommitted, err)
	}
	return evs[0].Seq, nil
}

// waitCovered waits until the checkpoint proofs are given against holds the
// event at seq: at once without witnesses, else once a witnessed checkpoint
// does.
func (c *stateCommitter) waitCovered(ctx context.Context, seq uint64) error {
	if c.witnessed == nil {
		return nil
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if w := c.witnessed(); w != nil && uint64(w.TreeSize) >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// newestCommitment is the chain's newest state.committed, if any.
func newestCommitment(chain *eventlog.Log) (*eventlog.Event, events.StateCommitted, bool, error) {
	var p events.StateCommitted
	ev, ok, err := chain.LastOfType(events.TypeStateCommitted, chain.Tip().Seq)
	if err != nil || !ok {
		return nil, p, false, err
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return nil, p, false, fmt.Errorf("%s at seq %d: %w", events.TypeStateCommitted, ev.Seq, err)
	}
	return ev, p, true, nil
}
