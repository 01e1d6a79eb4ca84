package eventlog

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// memTableSize is the log's memtable. A larger memtable than Pebble's 4 MiB
// default means fewer, larger flushes and less compaction work per appended
// event; it costs at most two memtables of RSS (MemTableStopWritesThreshold).
// 64 MiB rather than 32: alone it cut the compaction owed per mission create
// (bytes compacted plus the growth of Pebble's debt) to 0.69× at 300k
// missions; with L0's threshold below, to 0.57×, with CPU per create 0.90×
// and creates/s 1.10× (docs/benchmarks.md, "The write path: Pebble's
// options", round seven).
const memTableSize = 64 << 20

// pebbleOptions are the Pebble options the log opens its store with; Open
// adds the logger, the file system and the event listener. Each setting
// beyond Pebble's defaults is here because it was measured to help this
// load, a stream of small batches of mostly ascending keys plus the random
// id index (docs/benchmarks.md, "The write path: Pebble's options").
func pebbleOptions(cache *pebble.Cache) *pebble.Options {
	o := &pebble.Options{MemTableSize: memTableSize, Cache: cache}
	// Let L0 gather 8 sublevels (Pebble's default is 4) before it is
	// compacted into Lbase. Every group commit writes a random key (the id
	// index), so each flush overlaps all of Lbase, and an L0 compaction
	// rewrites the Lbase files it overlaps however little new data it
	// brings: gathering more per compaction cut the compactions to a third
	// (the figures above). Not more: 16 owed no fewer bytes than 8, and at
	// its deepest L0 made a Get of an absent id 2.6× and a 50-event scan 1.8×
	// slower than the old options did. Writes stall at 24 sublevels, not 12.
	o.L0CompactionThreshold, o.L0StopWritesThreshold = 8, 24
	// Bloom filters make a lookup of an absent key (a new mission id, a free
	// slug) cheap: the folds and the commands make several per write, and
	// without filters each one reads a block of every sstable it could be in.
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}
