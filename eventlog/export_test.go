package eventlog

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// PebbleCandidates are the changes to Pebble's options that
// BenchmarkPebbleOptions compares with the log's own (pebbleopts.go), by
// name. "base" changes nothing; each other sets its values outright, so
// "mem32" puts back the memtable (32 MiB) the log had before the value
// pebbleopts.go now sets, and "l0x8" the L0 threshold of schema 1.
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

// WithPebble makes the logs opened until restore is called change Pebble's
// options by the named candidates, joined by "+".
func WithPebble(candidates string) (restore func()) {
	names := strings.Split(candidates, "+")
	return withTune(func(o *pebble.Options) {
		for _, n := range names {
			PebbleCandidates[n](o)
		}
	})
}

// withTune makes the logs opened until restore is called change Pebble's
// options with tune.
func withTune(tune func(*pebble.Options)) (restore func()) {
	seams.tune = tune
	return func() { seams.tune = nil }
}

// withTree(false) makes the logs opened until restore is called keep no
// Merkle tree.
func withTree(on bool) (restore func()) {
	seams.withoutTree = !on
	return func() { seams.withoutTree = false }
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

// ProbeReads prices reads on the store as it stands: the median of n point
// reads of model keys the log does not hold (a fold's or a command's
// existence check: a free slug, say) and of n scans of 50 events from a
// random seq (a since-query's page), each through every level and L0
// sublevel the store has at that moment.
func ProbeReads(l *Log, n int) (get, scan time.Duration, err error) {
	rng := rand.New(rand.NewPCG(1, 2))
	tip := l.Tip().Seq
	gets, scans := make([]time.Duration, n), make([]time.Duration, n)
	space := spaceModelsA
	if sp := l.liveModels(); sp != nil {
		space = sp.prefix
	}
	for i := range n {
		absent := []byte{space, 'p', 'r', 'o', 'b', 'e', '/'}
		for range 16 {
			absent = append(absent, byte(rng.Uint32()))
		}
		start := time.Now()
		_, closer, err := l.db.Get(absent)
		gets[i] = time.Since(start)
		if err == nil {
			closer.Close()
		} else if !errors.Is(err, pebble.ErrNotFound) {
			return 0, 0, err
		}
		start = time.Now()
		it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceEvent}, UpperBound: []byte{spaceEvent + 1}})
		if err != nil {
			return 0, 0, err
		}
		k := 0
		for ok := it.SeekGE(eventKey(1 + rng.Uint64N(tip))); ok && k < 50; ok = it.Next() {
			_ = it.Value()
			k++
		}
		if err := it.Close(); err != nil {
			return 0, 0, err
		}
		scans[i] = time.Since(start)
	}
	slices.Sort(gets)
	slices.Sort(scans)
	return gets[n/2], scans[n/2], nil
}

// CanonicalBytes is what Canonicalize made, for the tests of eventlog_test
// that hold a CanonicalAppender to the encoding/json path.
func CanonicalBytes(c Canonical) []byte { return c.b }
