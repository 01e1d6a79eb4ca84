package eventlog

import (
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// PebbleCandidates are the changes to Pebble's options that
// BenchmarkPebbleOptions compares with the log's own (pebbleopts.go), by
// name. "base" changes nothing; each other sets its values outright, so
// "mem32+l0x4" is the log's options before issue 29.
var PebbleCandidates = map[string]func(*pebble.Options){
	"base": func(*pebble.Options) {},
	// The memtable: fewer, larger flushes the larger it is.
	"mem32": func(o *pebble.Options) { o.MemTableSize = 32 << 20 },
	"mem64": func(o *pebble.Options) { o.MemTableSize = 64 << 20 },
	// How many sublevels L0 gathers before it is compacted into Lbase, so
	// one compaction rewrites the overlapping Lbase files for more new data.
	// l0x4 is Pebble's default.
	"l0x4": func(o *pebble.Options) {
		o.L0CompactionThreshold, o.L0StopWritesThreshold = 4, 12
	},
	"l0x8": func(o *pebble.Options) {
		o.L0CompactionThreshold, o.L0StopWritesThreshold = 8, 24
	},
	"l0x16": func(o *pebble.Options) {
		o.L0CompactionThreshold, o.L0StopWritesThreshold = 16, 40
	},
	// Larger files at every level (L0 8 MiB, doubling below).
	"file8": func(o *pebble.Options) { o.TargetFileSizes[0] = 8 << 20 },
	// A larger Lbase: fewer levels below it for the same data.
	"lbase256": func(o *pebble.Options) { o.LBaseMaxBytes = 256 << 20 },
	// Two compactions at once on two cores.
	"conc2": func(o *pebble.Options) {
		o.CompactionConcurrencyRange = func() (int, int) { return 2, 2 }
	},
	// Sync sstables as they are written in larger steps.
	"bps4m": func(o *pebble.Options) { o.BytesPerSync = 4 << 20 },
	// A block cache twice the default.
	"cache128": func(o *pebble.Options) {
		c := pebble.NewCache(128 << 20)
		o.Cache = c
		// Open takes its own reference; the one NewCache returned leaks
		// for the benchmark's life, which is fine in a benchmark.
	},
	// The columnar sstable format (new files only; one-way).
	"columnar": func(o *pebble.Options) { o.FormatMajorVersion = pebble.FormatColumnarBlocks },
	// Values of 256 bytes or more (events, model records) in blob files,
	// which compactions of the keys above them do not rewrite (one-way).
	"valsep": func(o *pebble.Options) {
		o.FormatMajorVersion = pebble.FormatValueSeparation
		o.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
			return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 256, MaxBlobReferenceDepth: 10,
				RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.2}
		}
	},
}

// WithPebble returns opts with Pebble's options changed by the named
// candidates, joined by "+".
func WithPebble(opts Options, candidates string) Options {
	names := strings.Split(candidates, "+")
	opts.tune = func(o *pebble.Options) {
		for _, n := range names {
			PebbleCandidates[n](o)
		}
	}
	return opts
}

// StoreFigures are Pebble's cumulative write figures for a benchmark.
type StoreFigures struct {
	WALBytes, Flushed, Compacted uint64
	Compactions                  int64
	ReadAmp                      int
	Debt                         uint64
}

// StoreMetrics reads them.
func StoreMetrics(l *Log) StoreFigures {
	m := l.db.Metrics()
	f := StoreFigures{WALBytes: m.WAL.BytesWritten, Compactions: m.Compact.Count, ReadAmp: m.ReadAmp(), Debt: m.Compact.EstimatedDebt}
	for _, lv := range m.Levels {
		f.Flushed += lv.TableBytesFlushed + lv.BlobBytesFlushed
		f.Compacted += lv.TableBytesCompacted + lv.BlobBytesCompacted
	}
	return f
}
