package eventlog

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TestStoreStatsFollowTheStore: the figures move with what the store does.
// With Pebble's own compactions held off, each flush adds an L0 sublevel and
// counts, five of them leave L0 waiting for a compaction (score 1 or more),
// and a compaction of everything empties L0, counts, and brings the score
// down. The files take space, and a closed log says so.
func TestStoreStatsFollowTheStore(t *testing.T) {
	restore := withTune(func(o *pebble.Options) { o.DisableAutomaticCompactions = true })
	l, err := Open(Options{Dir: t.TempDir(), Key: seedKey(t, vectorSeed)})
	restore() // Open has taken the options
	if err != nil {
		t.Fatal(err)
	}
	before, err := l.StoreStats()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustAppend(t, l, draft("test.stats", "i", i))
		if err := l.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	flushed, err := l.StoreStats()
	if err != nil {
		t.Fatal(err)
	}
	if flushed.Flushes != before.Flushes+5 || flushed.L0Sublevels != 5 {
		t.Fatalf("after five flushes: %d flushes (%d before), %d L0 sublevels; want %d and 5",
			flushed.Flushes, before.Flushes, flushed.L0Sublevels, before.Flushes+5)
	}
	if flushed.CompactionScore < 1 {
		t.Fatalf("five L0 sublevels with compactions held off: score %v, want 1 or more", flushed.CompactionScore)
	}
	if flushed.DiskBytes <= before.DiskBytes {
		t.Fatalf("five flushes took %d bytes on disk, %d before", flushed.DiskBytes, before.DiskBytes)
	}
	if err := l.db.Compact(t.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	compacted, err := l.StoreStats()
	if err != nil {
		t.Fatal(err)
	}
	if compacted.Compactions <= flushed.Compactions || compacted.CompactionTime <= 0 ||
		compacted.L0Sublevels != 0 || compacted.CompactionScore >= 1 {
		t.Fatalf("after compacting everything: %d compactions (%d before) taking %v, %d L0 sublevels, score %v; "+
			"want more, some time, L0 empty and a score under 1",
			compacted.Compactions, flushed.Compactions, compacted.CompactionTime, compacted.L0Sublevels, compacted.CompactionScore)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.StoreStats(); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreStats after Close: %v, want ErrClosed", err)
	}
}

// TestStallClockCountsStalls: the clock counts each stall and its time, the
// one under way included, and tells the pacer, which must stand aside in a
// stall.
func TestStallClockCountsStalls(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &stallClock{now: func() time.Time { return now }}
	p := newPacer(1, c)
	el := &pebble.EventListener{}
	c.listen(el)

	el.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "L0 file count limit exceeded"})
	if !p.stalls.stalled() {
		t.Fatal("the pacer does not see the stall")
	}
	now = now.Add(300 * time.Millisecond)
	if n, d := c.total(); n != 1 || d != 300*time.Millisecond {
		t.Fatalf("during the first stall: %d stalls, %v; want 1, 300ms", n, d)
	}
	el.WriteStallEnd()
	if p.stalls.stalled() {
		t.Fatal("the pacer does not see the stall's end")
	}
	now = now.Add(time.Second) // not stalled: no time counts
	el.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	now = now.Add(50 * time.Millisecond)
	el.WriteStallEnd()
	now = now.Add(time.Second)
	if n, d := c.total(); n != 2 || d != 350*time.Millisecond {
		t.Fatalf("after two stalls: %d stalls, %v; want 2, 350ms", n, d)
	}
}
