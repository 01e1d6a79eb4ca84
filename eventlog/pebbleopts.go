package eventlog

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// memTableSize is the log's memtable. A larger memtable than Pebble's 4 MiB
// default means fewer, larger flushes and less compaction work per appended
// event; it costs at most two memtables of RSS (MemTableStopWritesThreshold).
// 64 MiB rather than 32 MiB: with L0's threshold below, the bytes compacted
// per mission create, plus the growth of the compaction debt, fell from 4.6 KB
// to 2.5 KB at 300k missions, CPU per create by 5 % (median of 3 alternating
// rounds; docs/benchmarks.md, "The write path: Pebble's options").
const memTableSize = 64 << 20

// pebbleOptions are the Pebble options the log opens its store with; Open
// adds the logger, the file system and the event listener. Each setting
// beyond Pebble's defaults is here because it was measured to help this
// load, a stream of small batches of mostly ascending keys plus the random
// id index (docs/benchmarks.md, "The write path: Pebble's options").
func pebbleOptions(cache *pebble.Cache) *pebble.Options {
	o := &pebble.Options{MemTableSize: memTableSize, Cache: cache}
	// Let L0 gather 16 sublevels (Pebble's default is 4) before it is
	// compacted into Lbase. Every group commit writes a random key (the id
	// index), so each flush overlaps all of Lbase, and an L0 compaction
	// rewrites the Lbase files it overlaps whatever the amount of new data
	// it brings: gathering more per compaction cut the compactions to a third
	// and the bytes they write by half (the figures above, with the
	// memtable). Bloom filters keep the extra sublevels cheap for point
	// reads; writes stall at 40 sublevels instead of 12.
	o.L0CompactionThreshold, o.L0StopWritesThreshold = 16, 40
	// Bloom filters make a lookup of an absent key (a new mission id, a free
	// slug) cheap: the folds and the commands make several per write, and
	// without filters each one reads a block of every sstable it could be in.
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}
