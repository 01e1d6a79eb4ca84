package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// checkpointInterval is how often serve looks for a grown tree to publish:
// monitors learn of a new tree head within a second, and a busy node signs
// one checkpoint a second, not one per commit.
const checkpointInterval = time.Second

// publishCheckpoints publishes the tree's signed checkpoint on NATS
// (civnode.<node>.checkpoints, docs/transparency.md) at start and then each time the
// tree has grown, at most once per interval, until ctx is done.
func publishCheckpoints(ctx context.Context, l *eventlog.Log, st *stream.Server, interval time.Duration, logger *slog.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var published int64
	for {
		if l.TreeSize() != published {
			head, note, err := l.TreeCheckpoint()
			if err != nil {
				logger.Warn("sign the tree's checkpoint", "err", err)
			} else {
				st.PublishCheckpoint(head.Size, note)
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
