package eventlog

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// durableSnapshot is a Pebble snapshot of the store that ModelView hands out
// only once nothing in it could be taken back by a crash. The committer takes
// it right after it applies a group, before the next one (so it holds the
// group's model writes and no later ones, since the committer alone writes
// the live models), and publishes it after the group's fsync (commit.go); a
// rebuild takes and publishes one after its last fsync. Every ModelView
// made until the next one is taken shares it; the last to let go closes it.
type durableSnapshot struct {
	snap   *pebble.Snapshot
	prefix byte         // the live model space when it was taken
	refs   atomic.Int64 // the log's reference and one a ModelView
}

// acquire takes a reference unless the snapshot has been closed.
func (s *durableSnapshot) acquire() bool {
	for {
		n := s.refs.Load()
		if n == 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *durableSnapshot) release() {
	if s.refs.Add(-1) == 0 {
		s.snap.Close()
	}
}

// renewDurable takes a new durable snapshot of the models in sp and
// publishes it. Call it only where every model batch written so far is
// durable.
func (l *Log) renewDurable(sp *modelSpace) { l.publishDurable(l.newDurable(sp)) }

// newDurable takes a snapshot of the models in sp, to be published once
// everything it holds is durable.
func (l *Log) newDurable(sp *modelSpace) *durableSnapshot {
	s := &durableSnapshot{snap: l.db.NewSnapshot(), prefix: sp.prefix}
	s.refs.Store(1)
	return s
}

// publishDurable makes s what ModelView hands out and lets go of the log's
// reference to the one before.
func (l *Log) publishDurable(s *durableSnapshot) {
	if old := l.durable.Swap(s); old != nil {
		old.release()
	}
}

// dropDurable lets go of the log's reference, before the store closes.
func (l *Log) dropDurable() {
	if old := l.durable.Swap(nil); old != nil {
		old.release()
	}
}
