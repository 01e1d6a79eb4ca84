package projections

import (
	"context"
	"fmt"

	"github.com/civnode/civnode/eventlog"
)

// Model is a read model as Rebuild sees it: the state-machine contract of
// design.md (hashicorp/raft's FSM). Apply is deterministic and Reset discards
// every state.
type Model interface {
	Reset()
	Apply(ev eventlog.Event) error
}

// Rebuild resets every model and folds the chain into all of them, from genesis to
// the tip at the time of the call, in one scan. civnode serve calls it after
// eventlog.Open and before taking writes, civnode replay instead of serving.
//
// It must not run while events are appended: the hooks would feed the models
// events the scan also feeds them, and a hook's later event makes the model skip
// the scan's earlier ones (Apply ignores seqs it has passed).
//
// An event a model cannot apply does not stop the rebuild: the chain wins, and the
// model counts the event (Identities.Skipped) for the caller to report.
func Rebuild(ctx context.Context, log *eventlog.Log, models ...Model) error {
	for _, m := range models {
		m.Reset()
	}
	err := log.Scan(1, log.Tip().Seq, func(ev *eventlog.Event) error {
		for _, m := range models {
			_ = m.Apply(*ev) // counted by the model; see above
		}
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("rebuild projections: %w", err)
	}
	return nil
}
