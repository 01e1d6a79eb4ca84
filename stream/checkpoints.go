package stream

import (
	"context"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// CheckpointInterval is how often serve looks for a grown tree to publish:
// monitors learn of a new tree head within a second, and a busy node signs
// one checkpoint a second, not one per commit.
const CheckpointInterval = time.Second

// PublishCheckpoints publishes l's signed checkpoint on
// civnode.<node>.checkpoints (PublishCheckpoint) at start and then each time
// the tree has grown, at most once per interval, until ctx is done. A
// checkpoint that cannot be signed is logged and tried again at the next tick.
func (s *Server) PublishCheckpoints(ctx context.Context, l *eventlog.Log, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var published int64
	for {
		if l.TreeSize() != published {
			head, note, err := l.TreeCheckpoint()
			if err != nil {
				s.log.Warn("sign the tree's checkpoint", logkey.Err, err)
			} else {
				s.PublishCheckpoint(head.Size, note)
				published = head.Size
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
