package localnode

import (
	"context"
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// Replayed is what Replay found: the verified chain, how many events of
// each type it holds, what the rebuilt read models hold and how the kept
// ones differed.
type Replayed struct {
	Verified eventlog.VerifyReport
	Counts   map[string]uint64
	Diff     eventlog.ModelDiff
	// Models are the figures of the rebuilt models by name (the audit
	// entry), Figures the same in the order they are printed.
	Models  map[string]any
	Figures []projections.Figure
	// StateChecked counts the state.committed events whose roots the
	// rebuilt models gave again; StateMismatch is the first that differs.
	StateChecked  int
	StateMismatch *projections.StateMismatch
}

// Replay walks the whole chain of l verifying every event, counts its
// events by type, rebuilds every read model from the chain into a fresh key
// space and makes them live (civnode replay). bars draws the walks'
// progress as the CLI's bars do. A chain that does not verify, or a damaged
// store, is the log's ChainError, and the kept models stay live.
func Replay(ctx context.Context, l *eventlog.Log, bars func(desc string, total int64) (func(uint64), func())) (Replayed, error) {
	progress, done := bars("verify", int64(l.Tip().Seq))
	rep, err := l.Verify(ctx, progress)
	done()
	if err != nil {
		return Replayed{}, err
	}
	// Verify fixed the tip it checked; counting stops there too.
	counts := map[string]uint64{}
	if err := l.Scan(1, rep.Events, func(ev *eventlog.Event) error {
		counts[ev.Type]++
		return ctx.Err()
	}); err != nil {
		return Replayed{}, fmt.Errorf("count events: %w", err)
	}
	var onRebuild eventlog.RebuildProgress
	rebuilt, done := bars("rebuild", int64(l.Tip().Seq))
	if rebuilt != nil {
		onRebuild = func(seq, _ uint64) { rebuilt(seq) }
	}
	diff, err := l.RebuildModels(ctx, onRebuild)
	done()
	if err != nil {
		return Replayed{}, fmt.Errorf("rebuild read models: %w", err)
	}
	r := Replayed{Verified: rep, Counts: counts, Diff: diff, Models: map[string]any{}}
	// The rebuild dropped the state tree: every commitment is derived again
	// from the events and checked against the root it signs.
	r.StateChecked, err = projections.CheckStateCommitments(ctx, l)
	if !errors.As(err, &r.StateMismatch) && err != nil {
		return Replayed{}, fmt.Errorf("check the state commitments: %w", err)
	}
	for _, model := range projections.Models() {
		fs, err := model.Summary(l)
		if err != nil {
			return Replayed{}, fmt.Errorf("summarise the %s model: %w", model.Name, err)
		}
		for _, f := range fs {
			r.Models[f.Name] = f.Value
		}
		r.Figures = append(r.Figures, fs...)
	}
	return r, nil
}

// Record appends replay.completed, with what r found, to l's audit log.
func (r Replayed) Record(ctx context.Context, l *eventlog.Log) error {
	d := r.Diff
	if _, err := l.Audit(ctx, "replay.completed", l.NodeDID(), map[string]any{
		"event_count": r.Verified.Events, "chain_tip_hash": r.Verified.TipHash, "types": r.Counts, "models": r.Models,
		"model_differences":         map[string]uint64{"missing": d.Missing, "extra": d.Extra, "changed": d.Changed},
		"state_commitments_checked": r.StateChecked, "state_commitment_differs": r.StateMismatch != nil,
	}); err != nil {
		return fmt.Errorf("audit replay.completed: %w", err)
	}
	return nil
}
