package eventlog

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// durableSnapshot is a Pebble snapshot of the store taken when nothing in it
// could be taken back by a crash: by the committer right after a group's
// fsync (or after a rebuild's last one), when no other model batch is in
// flight, since the committer alone writes the live models. Every ModelView
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

// renewDurable takes a new durable snapshot of the models in sp and lets go
// of the log's reference to the one before. Call it only where every model
// batch written so far is durable.
func (l *Log) renewDurable(sp *modelSpace) {
	s := &durableSnapshot{snap: l.db.NewSnapshot(), prefix: sp.prefix}
	s.refs.Store(1)
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
