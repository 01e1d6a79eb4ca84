package eventlog

import (
	"errors"
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
// It is self-contained, so that the log's own options can change without it.
func SyncWriteLatency(dir string, n int, logger *slog.Logger) (_ time.Duration, err error) {
	if n < 1 {
		n = 1
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(benchFatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("pebble: %w", errors.New(string(f)))
		}
	}()
	db, err := pebble.Open(dir, &pebble.Options{Logger: benchLogger{logger}, MemTableSize: 32 << 20})
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
		if err := db.Set(key, val, pebble.Sync); err != nil {
			return 0, fmt.Errorf("synced write: %w", err)
		}
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	return lat[n/2], nil
}

// benchLogger routes the throwaway database's messages to slog. Fatalf must not
// return, so it panics with a benchFatal that SyncWriteLatency turns into its error.
type benchLogger struct{ l *slog.Logger }

type benchFatal string

func (b benchLogger) Infof(format string, args ...any) {
	b.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (b benchLogger) Errorf(format string, args ...any) {
	b.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (b benchLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.l.Error(msg, "component", "pebble")
	panic(benchFatal(msg))
}
