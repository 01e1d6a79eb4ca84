package stream

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A leaf hub that is down is logged as a warning on each redial, not as an
// error; other NATS errors stay errors.
func TestNATSLogLevels(t *testing.T) {
	var buf bytes.Buffer
	l := &natsLogger{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Errorf("Error trying to connect as leafnode to remote server %q (attempt %v): %v", "127.0.0.1:7422", 3, "connection refused")
	l.Errorf("something else failed: %v", "boom")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "attempt 3") ||
		!strings.Contains(lines[1], "level=ERROR") {
		t.Errorf("log:\n%s", buf.String())
	}
}
