package transparency

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// logHost serves a log as a node's API would, straight from the log.
type logHost struct{ l *eventlog.Log }

func (h logHost) First(ctx context.Context) (string, []byte, error) {
	return LogSource(h.l, "test").Head(ctx)
}

func (h logHost) Checkpoint(context.Context) ([]byte, error) {
	_, signed, err := h.l.TreeCheckpoint()
	return signed, err
}

func (h logHost) Consistency(_ context.Context, old, head eventlog.TreeHead) (tlog.TreeProof, error) {
	return h.l.ProveConsistency(old.Size, head.Size)
}

// testLog is an in-memory log of key with n events tagged tag after genesis.
func testLog(t *testing.T, key ed25519.PrivateKey, tag string, n int) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	appendNotes(t, l, tag, n)
	return l
}

func appendNotes(t *testing.T, l *eventlog.Log, tag string, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.note", Payload: map[string]any{"tag": tag, "n": i}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckJudges: Check trusts a first key, proves growth consistent, and
// names a fork (same size, or larger but not an extension), a rollback and
// another key with their sentinels, keeping the stored state and leaving one
// evidence file for each.
func TestCheckJudges(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	opts := CheckOptions{State: filepath.Join(t.TempDir(), "state.json")}
	ctx := context.Background()

	main := testLog(t, key, "main", 4)
	if rep, err := Check(ctx, logHost{main}, "u", opts); err != nil || rep.Result != "trusted" {
		t.Fatalf("first check: %+v %v", rep, err)
	}
	appendNotes(t, main, "main", 3)
	if rep, err := Check(ctx, logHost{main}, "u", opts); err != nil || rep.Result != "consistent" || rep.OldSize != 5 || rep.TreeSize != 8 {
		t.Fatalf("check after growth: %+v %v", rep, err)
	}
	stored, err := loadState(opts.State)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		host   *eventlog.Log
		result string
		is     error
	}{
		{"fork of the same size", testLog(t, key, "fork", 7), "forked", ErrForked},
		{"longer fork", testLog(t, key, "fork", 9), "forked", ErrForked},
		{"older tree", testLog(t, key, "main", 2), "rolled_back", ErrRolledBack},
		{"another node", testLog(t, otherKey, "main", 7), "another_key", ErrAnotherKey},
	} {
		rep, err := Check(ctx, logHost{tc.host}, "u", opts)
		if !errors.Is(err, tc.is) || rep.Result != tc.result || rep.Evidence == "" {
			t.Errorf("%s: %+v %v, want %s", tc.name, rep, err, tc.result)
		}
		if st, err := loadState(opts.State); err != nil || st.Checkpoint != stored.Checkpoint {
			t.Errorf("%s: the state changed: %+v %v", tc.name, st, err)
		}
	}
	if files, _ := filepath.Glob(opts.State + ".evidence-*.json"); len(files) != 4 {
		t.Errorf("evidence files %q, want four", files)
	}
	if rep, err := Check(ctx, logHost{main}, "u", opts); err != nil || rep.Result != "unchanged" {
		t.Errorf("check of the original log after the refusals: %+v %v", rep, err)
	}
}
