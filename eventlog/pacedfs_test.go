package eventlog

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// recordingPacer is a pacer whose pauses are recorded, not slept.
func recordingPacer(k float64) (*pacer, *[]time.Duration) {
	p := newPacer(k, &stallClock{})
	var pauses []time.Duration
	p.sleep = func(d time.Duration) { pauses = append(pauses, d) }
	return p, &pauses
}

// work spins for d, as a compaction building its next block would.
func work(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// TestPacedFlushAndCompactionOutputs: a flush's or a compaction's sstable
// pauses k times as long as the job worked between two writes, once the pause
// owed is worth a timer; every other file Pebble writes (the WAL first of
// all) is not paced at all.
func TestPacedFlushAndCompactionOutputs(t *testing.T) {
	for _, category := range []vfs.DiskWriteCategory{categoryFlush, categoryCompaction} {
		p, pauses := recordingPacer(2)
		f, err := p.fs(vfs.NewMem()).Create("000001.sst", category)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(*pacedFile); !ok {
			t.Fatalf("%s: the file is %T, not paced", category, f)
		}
		f.Write([]byte("block")) // the first write owes nothing
		if len(*pauses) != 0 {
			t.Fatalf("%s: paused %v before the first write", category, *pauses)
		}
		work(3 * time.Millisecond)
		f.Write([]byte("block"))
		if len(*pauses) != 1 || (*pauses)[0] < 6*time.Millisecond {
			t.Fatalf("%s: after 3 ms of work at k=2 the pauses were %v, want one of 6 ms or more", category, *pauses)
		}
		f.Close()
	}
	for _, category := range []vfs.DiskWriteCategory{"pebble-wal", vfs.WriteCategoryUnspecified} {
		p, _ := recordingPacer(2)
		f, err := p.fs(vfs.NewMem()).Create("x", category)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(*pacedFile); ok {
			t.Errorf("%s: the file is paced", category)
		}
		f.Close()
	}
}

// TestPacerStandsAsideInAWriteStall: while Pebble stalls writes, the writers
// wait for the flush or compaction, so it is not slowed, and what it owed
// before the stall is forgiven.
func TestPacerStandsAsideInAWriteStall(t *testing.T) {
	p, pauses := recordingPacer(1)
	el := &pebble.EventListener{}
	p.stalls.listen(el)
	f, err := p.fs(vfs.NewMem()).Create("000001.sst", categoryCompaction)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("block"))
	el.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	work(3 * time.Millisecond)
	f.Write([]byte("block"))
	if len(*pauses) != 0 {
		t.Fatalf("paused %v during a write stall", *pauses)
	}
	el.WriteStallEnd()
	work(3 * time.Millisecond)
	f.Write([]byte("block"))
	if len(*pauses) != 1 || (*pauses)[0] < 3*time.Millisecond {
		t.Fatalf("after the stall, 3 ms of work paused %v, want one pause of 3 ms or more", *pauses)
	}
}

// categoryFS records the categories Pebble creates its files with.
type categoryFS struct {
	vfs.FS
	seen map[vfs.DiskWriteCategory]bool
}

func (fs categoryFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	fs.seen[category] = true
	return fs.FS.Create(name, category)
}

// TestPacedStoreRoundTrips: a log whose store is paced flushes and compacts
// as any other, and what it wrote reads back after a reopen. Pebble names
// its flush and compaction outputs with the categories the pacer looks for
// (a Pebble that renamed them would leave every file unpaced).
func TestPacedStoreRoundTrips(t *testing.T) {
	dir, key := t.TempDir(), seedKey(t, vectorSeed)
	fs := categoryFS{FS: vfs.Default, seen: map[vfs.DiskWriteCategory]bool{}}
	l, err := Open(Options{Dir: dir, Key: key, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	// Two flushes whose files overlap (the tree's size key is in both), so
	// that the compaction merges them rather than moving one file down.
	for i := 2; i <= 200; i++ {
		mustAppend(t, l, draft("test.numbered", "n", i))
		if i == 100 || i == 200 {
			if err := l.db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.db.Compact(t.Context(), []byte{spaceEvent}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, c := range []vfs.DiskWriteCategory{categoryFlush, categoryCompaction} {
		if !fs.seen[c] {
			t.Errorf("Pebble created no file of category %q; it created %v", c, fs.seen)
		}
	}
	l, err = Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Verify(t.Context(), nil); err != nil || l.Tip().Seq != 200 {
		t.Fatalf("after a paced flush and compaction: verify %v, tip %d", err, l.Tip().Seq)
	}
}
