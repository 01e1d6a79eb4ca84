package eventlog

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestDerivedWrites: derived writes are seen at once through a DerivedView,
// by ModelView once the next event is durable, survive a reopen beside the
// folded records, and go with the old space when the models are rebuilt; a
// batch begun before the rebuild is refused.
func TestDerivedWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, draft("test.a"))
	w, err := l.DerivedWrites()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"d/a", "d/b", "d/c"} {
		if err := w.Set([]byte(k), []byte(k+"!")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	get := func(v *ModelView, k string) string {
		t.Helper()
		key := []byte(k)
		if k[0] == 'd' {
			key = DerivedKey(key)
		}
		b, ok, err := v.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "(none)"
		}
		return string(b)
	}
	dv, err := l.DerivedView()
	if err != nil {
		t.Fatal(err)
	}
	if got := get(dv, "d/b"); got != "d/b!" {
		t.Errorf("derived view: d/b = %q", got)
	}
	dv.Close()
	mv, _ := l.ModelView()
	if got := get(mv, "d/b"); got != "(none)" {
		t.Errorf("a durable view taken before the next event shows d/b = %q", got)
	}
	mv.Close()
	mustAppend(t, l, draft("test.b"))
	mv, _ = l.ModelView()
	if got := get(mv, "d/b"); got != "d/b!" {
		t.Errorf("after the next event: d/b = %q", got)
	}
	mv.Close()

	w, _ = l.DerivedWrites()
	w.DeleteRange([]byte("d/a"), []byte("d/c"))
	if w.Len() != 1 {
		t.Errorf("Len = %d after one range deletion", w.Len())
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := (&DerivedWrites{l: l}).Commit(); !errors.Is(err, ErrClosed) {
		t.Errorf("a commit after Close: %v", err)
	}

	l, err = Open(Options{Dir: dir, Key: key, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mv, _ = l.ModelView()
	for k, want := range map[string]string{"d/a": "(none)", "d/b": "(none)", "d/c": "d/c!", "seq/2": "test.a"} {
		if got := get(mv, k); got != want {
			t.Errorf("reopened: %s = %q, want %q", k, got, want)
		}
	}
	mv.Close()

	stale, _ := l.DerivedWrites()
	stale.Set([]byte("d/x"), []byte("x"))
	if diff, err := l.RebuildModels(t.Context(), nil); err != nil || !diff.Same() {
		t.Fatalf("rebuild: %+v, %v; derived keys are not the folds' to compare", diff, err)
	}
	if err := stale.Commit(); !errors.Is(err, ErrModelsReplaced) {
		t.Errorf("a batch begun before a rebuild: %v", err)
	}
	mv, _ = l.ModelView()
	defer mv.Close()
	for k, want := range map[string]string{"d/c": "(none)", "d/x": "(none)", "seq/2": "test.a"} {
		if got := get(mv, k); got != want {
			t.Errorf("rebuilt: %s = %q, want %q", k, got, want)
		}
	}
}
