package eventlog

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewStoreLogsNoSchemaChange: a new store has no stored read models, so
// opening it logs no schema change (nor any rebuild); a store whose models
// were stored under another version logs one.
func TestNewStoreLogsNoSchemaChange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	key := seedKey(t, vectorSeed)
	open := func(version string) string {
		t.Helper()
		var buf bytes.Buffer
		l, err := Open(Options{Dir: dir, Key: key, Models: &counter{version: version}, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if out := open("1"); strings.Contains(out, "schema changed") || strings.Contains(out, "building") {
		t.Errorf("a new store logged a rebuild:\n%s", out)
	}
	if out := open("1"); strings.Contains(out, "schema changed") {
		t.Errorf("a store reopened at the same version logged a schema change:\n%s", out)
	}
	if out := open("2"); !strings.Contains(out, "read model schema changed") || !strings.Contains(out, "stored_version=1") {
		t.Errorf("a store opened at another version did not log the schema change:\n%s", out)
	}
}
