package eventlog

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestSealAt: a seal of a tree below the tip verifies with the node's key,
// is of that tree (its checkpoint's size and the id of the event at that
// seq), and a mirror holding those events stores it; sizes outside the
// chain are refused, and a mirror answers only the seal it holds.
func TestSealAt(t *testing.T) {
	src, _ := importSource(t, 700)
	s300, err := src.SealAt(300)
	if err != nil {
		t.Fatal(err)
	}
	head, err := VerifySeal(s300, src.NodeDID(), src.PublicKey())
	if err != nil {
		t.Fatalf("the seal at 300 does not verify: %v", err)
	}
	ev, err := src.Event(300)
	if err != nil {
		t.Fatal(err)
	}
	if head.Size != 300 || s300.EventCount != 300 || s300.TipHash != ev.ID || s300.RootHash != src.RootHash() {
		t.Fatalf("seal at 300: size %d, event_count %d, tip %s (event 300 is %s)", head.Size, s300.EventCount, s300.TipHash, ev.ID)
	}
	want, err := src.TreeRoot(300)
	if err != nil {
		t.Fatal(err)
	}
	if head.Root != want {
		t.Fatal("the seal's checkpoint is not of the tree of 300 events")
	}
	if tip, err := src.SealAt(int64(src.Tip().Seq)); err != nil || tip.EventCount != src.Tip().Seq {
		t.Fatalf("seal at the tip: %+v, %v", tip, err)
	}
	for _, size := range []int64{0, -1, int64(src.Tip().Seq) + 1} {
		if _, err := src.SealAt(size); !errors.Is(err, ErrNotFound) {
			t.Fatalf("seal at %d: %v, want ErrNotFound", size, err)
		}
	}

	m := openMirror(t, filepath.Join(t.TempDir(), "db"), src.PublicKey())
	var evs []*Event
	if err := src.Scan(1, 300, func(ev *Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Ingest(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if err := m.StoreSeal(s300); err != nil {
		t.Fatalf("a mirror of 300 events refuses the seal at 300: %v", err)
	}
	if got, err := m.SealAt(300); err != nil || got != s300 {
		t.Fatalf("a mirror's seal at 300: %v", err)
	}
	if _, err := m.SealAt(200); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a mirror's seal at 200: %v, want ErrReadOnly", err)
	}
}
