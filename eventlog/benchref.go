package eventlog

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// SyncWriteLatency is the storage reference limit that civnode bench prints
// beside the node's figures: the median latency of one small synced Pebble write
// as a lone writer sees it (no group commit), measured in a throwaway database in
// dir opened with the memtable size the log uses. It lives here because Pebble
// may only be imported by this package (deps_test.go), and the bench must
// measure the engine the log writes through rather than a bare fsync. dir must be
// empty or absent; the caller removes it. n is the number of writes, at least 1.
func SyncWriteLatency(dir string, n int, logger *slog.Logger) (_ time.Duration, err error) {
	if n < 1 {
		n = 1
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{logger}, MemTableSize: memTableSize})
	if err != nil {
		return 0, fmt.Errorf("open pebble: %w", err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close pebble: %w", cerr)
		}
	}()
	lat := make([]time.Duration, n)
	key := make([]byte, 2)
	val := []byte("x")
	for i := range lat {
		key[0], key[1] = byte(i>>8), byte(i)
		start := time.Now()
		if err := withFatal(func() error { return db.Set(key, val, pebble.Sync) }); err != nil {
			return 0, fmt.Errorf("synced write: %w", err)
		}
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	return lat[n/2], nil
}
