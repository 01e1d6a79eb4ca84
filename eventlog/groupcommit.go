package eventlog

import "time"

// GroupCommit describes one group the committer wrote: the events it carried
// and how long their Pebble batch took to commit, the WAL fsync included. The
// node's metrics (GET /v1/metrics) are built from it; the log keeps no
// statistics of its own.
type GroupCommit struct {
	// Events is the number of events in the group's batch.
	Events int
	// Duration is from the batch's write to the end of the WAL fsync that
	// covers it (commit.go): the write, the fsync, and any of the fsync
	// before it that was still running. On a fast disk the fsyncs are nearly
	// all of it.
	Duration time.Duration
	// Err is the commit's error; non-nil means the log has failed (fail-stop)
	// and the group's events were not acknowledged.
	Err error
}
