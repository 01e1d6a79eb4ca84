package eventlog

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// pacer keeps Pebble's memtable flushes and compactions from taking a whole
// core in a burst. Pebble runs each on one goroutine that is always
// runnable, while the goroutines serving requests block on the network and
// on fsyncs; on a machine of few cores Go's scheduler then gives the flush a
// core for as long as it runs, and the requests that arrive meanwhile wait
// behind it (docs/benchmarks.md, "Pacing Pebble's background work").
//
// The pacer wraps the store's file system. Each sstable a flush or a
// compaction writes is a pacedFile, which before each write sleeps k times
// as long as the job computed since its last write: the job runs at most
// 1/(1+k) of the time, so it takes as much CPU in all, spread over a longer
// time. The write-ahead log and every other file are not paced. Nor is
// anything while Pebble stalls writes (the log's stallClock, which counts
// them for StoreStats, says when): then the flush or compaction is what the
// writers wait for.
type pacer struct {
	k      float64
	stalls *stallClock
	// sleep is time.Sleep; tests record the pauses instead.
	sleep func(time.Duration)
}

// backgroundPace is the pacer's k: a flush or compaction sleeps as long as it
// works, so it uses at most half a core while it runs.
const backgroundPace = 1.0

// minPause is the shortest pause a pacedFile takes: it sums what it owes and
// sleeps once that is worth a timer, so that the pauses are what they say
// however coarse the runtime's sleeps are.
const minPause = 2 * time.Millisecond

func newPacer(k float64, stalls *stallClock) *pacer {
	return &pacer{k: k, stalls: stalls, sleep: time.Sleep}
}

// fs wraps inner.
func (p *pacer) fs(inner vfs.FS) vfs.FS { return pacedFS{FS: inner, p: p} }

// pacedFS is a vfs.FS whose flush and compaction outputs are paced.
type pacedFS struct {
	vfs.FS
	p *pacer
}

// The categories Pebble creates its flush and compaction outputs with
// (getDiskWriteCategoryForCompaction in Pebble's compaction.go).
const (
	categoryFlush      vfs.DiskWriteCategory = "pebble-memtable-flush"
	categoryCompaction vfs.DiskWriteCategory = "pebble-compaction"
)

func (fs pacedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || (category != categoryFlush && category != categoryCompaction) {
		return f, err
	}
	return &pacedFile{File: f, p: fs.p}, nil
}

// pacedFile is one sstable being written by a flush or a compaction; one
// goroutine writes it.
type pacedFile struct {
	vfs.File
	p    *pacer
	last time.Time     // when the last write returned
	owe  time.Duration // pause owed, not yet taken (negative: overslept)
}

func (f *pacedFile) Write(b []byte) (int, error) {
	switch {
	case f.p.stalls.stalled():
		f.owe = 0
	case !f.last.IsZero():
		f.owe += time.Duration(float64(time.Since(f.last)) * f.p.k)
		if f.owe >= minPause {
			start := time.Now()
			f.p.sleep(f.owe)
			f.owe -= time.Since(start)
		}
	}
	n, err := f.File.Write(b)
	f.last = time.Now()
	return n, err
}
