package eventlog

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// A held log appends nothing, by Append or Decide, and says why; Ingest of
// events signed elsewhere still goes on, and Release lets it append again.
func TestHoldRefusesAppendsNotIngest(t *testing.T) {
	ctx := context.Background()
	src := openMem(t, Options{Models: &counter{version: "1"}})
	mustAppend(t, src, draft("test.seq", "i", 1), draft("test.seq", "i", 2), draft("test.seq", "i", 3))
	l := openIngest(t, filepath.Join(t.TempDir(), "db"))
	t.Cleanup(func() { l.Close() })
	l.Hold(Behind{Size: 4, Tip: 0, Seen: "the published directory /p", Reason: "behind"})
	_, err := l.Append(ctx, draft("test.seq", "i", 9))
	var b *Behind
	if !errors.Is(err, ErrBehindPublished) || !errors.As(err, &b) || b.Size != 4 || b.Seen != "the published directory /p" {
		t.Fatalf("Append on a held log: %v", err)
	}
	if _, err := l.Decide(ctx, func() ([]Draft, error) { return []Draft{draft("test.seq", "i", 9)}, nil }); !errors.Is(err, ErrBehindPublished) {
		t.Fatalf("Decide on a held log: %v", err)
	}
	var evs []*Event
	if err := src.Scan(1, 4, func(ev *Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l.Ingest(ctx, evs); err != nil {
		t.Fatalf("Ingest on a held log: %v", err)
	}
	if h := l.Held(); h == nil || h.Reason != "behind" {
		t.Fatalf("Held = %+v", h)
	}
	if _, err := l.AppendHeld(ctx, draft("test.seq", "i", 5)); err != nil {
		t.Fatalf("AppendHeld on a held log: %v", err)
	}
	if _, err := l.Append(ctx, draft("test.seq", "i", 9)); !errors.Is(err, ErrBehindPublished) {
		t.Fatalf("Append after AppendHeld, still held: %v", err)
	}
	l.Release()
	mustAppend(t, l, draft("test.seq", "i", 6))
	if l.Tip().Seq != 6 {
		t.Fatalf("tip %d, want 6", l.Tip().Seq)
	}
}
