package eventlog

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// memTableSize is the log's memtable, larger than Pebble's 4 MiB default:
// fewer, larger flushes leave less compaction work per appended event, for
// at most two memtables of memory (MemTableStopWritesThreshold)
// (docs/benchmarks.md, "Pebble's options").
const memTableSize = 64 << 20

// blockCacheSize is Pebble's block cache, through which every read of the
// store goes; a fixed size keeps the node's memory bounded.
const blockCacheSize = 64 << 20

// pebbleOptions are the Pebble options the log opens its store with; Open
// adds the logger, the file system and the event listener. Each setting
// beyond Pebble's defaults is here because it helps this load, a stream of
// small batches of keys that ascend where each key space and index ends
// (docs/benchmarks.md, "Pebble's options").
//
// L0 is compacted into Lbase at Pebble's default, 4 sublevels: the flushes
// hold only keys that ascend where each space ends, so they overlap little
// of Lbase, and more sublevels would let L0 pile up instead of saving
// rewrites (docs/benchmarks.md, "A store without a random key").
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
