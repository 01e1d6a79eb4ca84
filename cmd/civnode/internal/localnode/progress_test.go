package localnode

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestProgressLoggerAtMostALineASecond: start-up progress logs no two lines
// within a second of each other or of the start, however fast the chain
// folds, and no more than about one every 5 % of the way, however slowly.
func TestProgressLoggerAtMostALineASecond(t *testing.T) {
	const total = 10_000
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		perEvent time.Duration // the time one event takes to fold
		min, max int           // lines logged
	}{
		{"fast", time.Microsecond, 0, 0},                // 10 ms in all
		{"a few seconds", 500 * time.Microsecond, 4, 5}, // 5 s in all
		{"slow", time.Second, 19, 20},                   // every 5 % step is over a second apart
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			clock := start
			// Each timestamp is the fake clock's, so that the test reads
			// the intervals the logger saw.
			logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					a.Value = slog.TimeValue(clock)
				}
				return a
			}}))
			progress := progressLoggerAt(logger, "folding", func() time.Time { return clock })
			for seq := uint64(1); seq <= total; seq++ {
				clock = clock.Add(tc.perEvent)
				progress(seq, total)
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if buf.Len() == 0 {
				lines = nil
			}
			if len(lines) < tc.min || len(lines) > tc.max {
				t.Fatalf("%d lines, want %d to %d:\n%s", len(lines), tc.min, tc.max, buf.String())
			}
			prev := start
			for _, l := range lines {
				ts, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
				at, err := time.Parse(time.RFC3339Nano, ts)
				if err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if at.Sub(prev) < time.Second {
					t.Errorf("line %q %v after the one before it (or the start)", l, at.Sub(prev))
				}
				prev = at
			}
		})
	}
}
