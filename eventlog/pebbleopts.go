package eventlog

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// memTableSize is the log's memtable. A larger memtable than Pebble's 4 MiB
// default means fewer, larger flushes and less compaction work per appended
// event; it costs at most two memtables of RSS (MemTableStopWritesThreshold).
// 64 MiB rather than 32 because it leaves less compaction owed per mission
// create (bytes compacted plus the growth of Pebble's debt) for no more CPU
// (docs/benchmarks.md, "Pebble's options").
const memTableSize = 64 << 20

// pebbleOptions are the Pebble options the log opens its store with; Open
// adds the logger, the file system and the event listener. Each setting
// beyond Pebble's defaults is here because it was measured to help this
// load, a stream of small batches of keys that ascend where each key space
// and index ends (docs/benchmarks.md, "Pebble's options").
//
// L0 is compacted into Lbase at Pebble's default, 4 sublevels. Schema 1
// set 8: its id index put a random key in every group commit, so every
// flush overlapped all of Lbase and gathering more per compaction cut the
// rewrites. Without that index (schema.go) the flushes hold only keys
// that ascend where each space ends, and 8 sublevels let L0 pile up
// instead: over a million creates on a million-event store the debt
// Pebble owed grew to 3 GB at 8 and stayed near 100 MiB at 4, for the
// same CPU per create (docs/benchmarks.md, "A store without a random key").
func pebbleOptions(cache *pebble.Cache) *pebble.Options {
	o := &pebble.Options{MemTableSize: memTableSize, Cache: cache}
	// Bloom filters make a lookup of an absent key (a new mission id, a free
	// slug) cheap: the folds and the commands make several per write, and
	// without filters each one reads a block of every sstable it could be in.
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}
