package loglevel

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestFloor: records below the floor are dropped, at or above it pass, and
// a logger derived with attributes or a group keeps the floor.
func TestFloor(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(Floor(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), slog.LevelWarn))
	derived := logger.With("component", "x").WithGroup("g")
	for _, l := range []*slog.Logger{logger, derived} {
		l.Info("routine")
		l.Debug("detail")
		l.Warn("kept")
		l.Error("kept too")
	}
	out := buf.String()
	if strings.Contains(out, "routine") || strings.Contains(out, "detail") {
		t.Errorf("a record below the floor passed:\n%s", out)
	}
	if strings.Count(out, "kept") != 4 || !strings.Contains(out, "component=x") {
		t.Errorf("want both records from both loggers:\n%s", out)
	}
}
