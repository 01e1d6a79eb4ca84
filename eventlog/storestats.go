package eventlog

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// StoreStats is what Pebble, the store's engine, reports of its upkeep: the
// figures that show, over a node's years, whether flushes and compactions keep
// up with the writes. GET /v1/metrics serves them (docs/metrics.md).
type StoreStats struct {
	// DiskBytes is the space the store's files take: sstables, write-ahead
	// logs and manifests.
	DiskBytes uint64
	// CompactionDebtBytes is Pebble's estimate of the bytes compactions
	// would rewrite to bring the store to a stable shape. It assumes every
	// byte now in L0 is compacted into the level below, with that level, so
	// while L0 holds anything it is about the size of that level and grows
	// with the store; it is not a backlog. CompactionScore is.
	CompactionDebtBytes uint64
	// CompactionScore is the highest of the levels' compaction scores: a level
	// at 1 or more is waiting for a compaction. It goes over 1 in a burst of
	// writes and back under; one that stays over 1 means compactions do not
	// keep up.
	CompactionScore float64
	// L0Sublevels is the depth of level 0, the files a read may have to look
	// in there. Pebble compacts L0 from 4 sublevels and stalls writes at 12,
	// its defaults (pebbleopts.go); a level 0 that stays deep is compaction
	// falling behind.
	L0Sublevels int
	// Flushes and Compactions count the memtable flushes and the compactions
	// since the store was opened; CompactionTime is the compactions' time.
	Flushes, Compactions int64
	CompactionTime       time.Duration
	// WriteStalls counts the times since Open that Pebble held writes back
	// for its flushes or L0 to catch up, and WriteStallTime their length,
	// the one under way included.
	WriteStalls    int64
	WriteStallTime time.Duration
}

// StoreStats reads the store's figures now. It takes Pebble's metrics, a few
// microseconds under its own locks: it is meant for a scrape, not for a loop.
func (l *Log) StoreStats() (StoreStats, error) {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return StoreStats{}, ErrClosed
	}
	m := l.db.Metrics()
	count, stalled := l.stalls.total()
	return StoreStats{
		DiskBytes:           m.DiskSpaceUsage(),
		CompactionDebtBytes: m.Compact.EstimatedDebt,
		CompactionScore:     maxScore(m),
		L0Sublevels:         int(m.Levels[0].Sublevels),
		Flushes:             m.Flush.Count,
		Compactions:         m.Compact.Count,
		CompactionTime:      m.Compact.Duration,
		WriteStalls:         count,
		WriteStallTime:      stalled,
	}, nil
}

// maxScore is the highest of the levels' compaction scores.
func maxScore(m *pebble.Metrics) float64 {
	var top float64
	for _, lv := range m.Levels {
		top = max(top, lv.Score)
	}
	return top
}

// stallClock counts Pebble's write stalls and adds up their time, from the
// store's event listener, and tells the pacer (pacedfs.go) while one is under
// way.
type stallClock struct {
	count atomic.Int64
	done  atomic.Int64 // nanoseconds of the stalls that have ended
	began atomic.Int64 // when the stall under way began (Unix ns); 0 when none
	now   func() time.Time
}

// listen makes the clock el's write-stall callbacks.
func (c *stallClock) listen(el *pebble.EventListener) {
	if c.now == nil {
		c.now = time.Now
	}
	el.WriteStallBegin = func(pebble.WriteStallBeginInfo) {
		c.count.Add(1)
		c.began.Store(c.now().UnixNano())
	}
	el.WriteStallEnd = func() {
		if b := c.began.Swap(0); b != 0 {
			c.done.Add(c.now().UnixNano() - b)
		}
	}
}

// stalled reports a stall under way.
func (c *stallClock) stalled() bool { return c.began.Load() != 0 }

// total is the stalls so far and their time, the one under way included.
func (c *stallClock) total() (int64, time.Duration) {
	t := c.done.Load()
	if b := c.began.Load(); b != 0 {
		t += max(0, c.now().UnixNano()-b)
	}
	return c.count.Load(), time.Duration(t)
}
