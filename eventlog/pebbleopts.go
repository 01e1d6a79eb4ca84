package eventlog

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// memTableSize is the log's memtable. A larger memtable than Pebble's 4 MiB
// default means fewer, larger flushes and less compaction work per appended
// event; it costs at most two memtables of RSS.
const memTableSize = 32 << 20

// pebbleOptions are the Pebble options the log opens its store with; Open
// adds the logger, the file system and the event listener. Each setting
// beyond Pebble's defaults is here because it was measured to help this
// load, a stream of small batches of mostly ascending keys plus the random
// id index (docs/benchmarks.md, "The write path: Pebble's options").
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
