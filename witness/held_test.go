package witness

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// HeldSize learns the tree a witness holds: the size asked when it cosigns,
// else the size of its 409, larger or smaller.
func TestHeldSize(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 4)
	w := newTestWitness(t, filepath.Join(dir, "w.json"), lg.vkey)
	r, err := ParseRemote(w.VerifierKey() + "@" + serveWitness(t, w).URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ask := func(size int64) int64 {
		t.Helper()
		_, signed, err := lg.TreeCheckpointAt(size)
		if err != nil {
			t.Fatal(err)
		}
		held, err := HeldSize(ctx, nil, r, signed, size)
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	if got := ask(4); got != 0 {
		t.Errorf("a witness that holds nothing: %d, want 0 (its 409)", got)
	}
	if _, err := w.AddCheckpoint(lg.request(t, 0)); err != nil { // it holds 4
		t.Fatal(err)
	}
	if got := ask(4); got != 4 {
		t.Errorf("asked with the tree it holds: %d, want 4", got)
	}
	lg.append(t, "b", 3)
	if got := ask(7); got != 4 {
		t.Errorf("asked with a larger tree: %d, want its 4", got)
	}
	if _, err := w.AddCheckpoint(lg.request(t, 4)); err != nil { // it holds 7
		t.Fatal(err)
	}
	if got := ask(4); got != 7 {
		t.Errorf("asked with a smaller tree: %d, want its 7", got)
	}

	// Another log of the same key, of 7 events that differ from the 7 the
	// witness cosigned.
	other := newMemLog(t, 1)
	other.append(t, "c", 7)
	_, signed, err := other.TreeCheckpointAt(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HeldSize(ctx, nil, r, signed, 7); !errors.Is(err, ErrHeldAnotherTree) {
		t.Errorf("asked with another tree of the size it holds: %v, want ErrHeldAnotherTree", err)
	}
}
