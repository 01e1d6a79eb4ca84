package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// importSource is a log of n test events (genesis included) folded by a
// counter, and its export bundle.
func importSource(t *testing.T, n int) (*Log, []byte) {
	t.Helper()
	src := openMem(t, Options{Models: &counter{version: "1"}})
	for i := 1; i < n; i += 100 {
		var ds []Draft
		for j := i; j < min(i+100, n); j++ {
			ds = append(ds, draft("test.seq", "i", j, "text", "é\u2028<&>"))
		}
		mustAppend(t, src, ds...)
	}
	var buf bytes.Buffer
	if _, err := src.WriteBundle(context.Background(), &buf, BundleHeader{ExportID: "exp-1", GeneratedAt: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	return src, buf.Bytes()
}

func openIngest(t *testing.T, dir string) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed), Models: &counter{version: "1"}, Ingest: true})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestImportBundleIsTheSameLog: a log filled from a bundle, even a
// pretty-printed one, holds the source's events byte for byte, the same tip,
// root, Merkle tree and read models; it reopens as an ordinary log and goes on
// appending after the imported tip.
func TestImportBundleIsTheSameLog(t *testing.T) {
	src, bundle := importSource(t, 2500)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, bundle, "", "   "); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"as exported": bundle, "pretty-printed": pretty.Bytes()} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			l := openIngest(t, dir)
			var seen uint64
			rep, err := l.ImportBundle(context.Background(), bytes.NewReader(b), func(seq uint64) { seen = seq })
			if err != nil {
				t.Fatal(err)
			}
			if rep.EventCount != 2500 || seen != 2500 {
				t.Fatalf("report %d events, progress reached %d", rep.EventCount, seen)
			}
			sameLog(t, src, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, err = Open(Options{Dir: dir, Key: seedKey(t, vectorSeed), Models: &counter{version: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			sameLog(t, src, l)
			ev := mustAppend(t, l, draft("test.after", "i", 1))[0]
			if ev.Seq != 2501 || ev.PrevHash != src.Tip().ID {
				t.Fatalf("append after the import: seq %d prev %s, want 2501 after %s", ev.Seq, ev.PrevHash, src.Tip().ID)
			}
			if _, err := l.Verify(context.Background(), nil); err != nil {
				t.Fatalf("verify after import and append: %v", err)
			}
		})
	}
}

func sameLog(t *testing.T, want, got *Log) {
	t.Helper()
	if got.Tip() != want.Tip() || got.RootHash() != want.RootHash() {
		t.Fatalf("tip %+v root %s, want %+v root %s", got.Tip(), got.RootHash(), want.Tip(), want.RootHash())
	}
	tip := want.Tip().Seq
	err := want.Scan(1, tip, func(w *Event) error {
		g, err := got.Event(w.Seq)
		if err != nil {
			return err
		}
		if !bytes.Equal(g.Raw(), w.Raw()) {
			t.Fatalf("event %d stored as\n%s\nwant\n%s", w.Seq, g.Raw(), w.Raw())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wh, _, err := want.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	gh, _, err := got.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if gh != wh {
		t.Fatalf("tree head %+v, want %+v", gh, wh)
	}
	for _, typ := range []string{TypeGenesis, "test.seq"} {
		q := Query{Type: typ, Limit: 5}
		a, _, err := want.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := got.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) || a[len(a)-1].ID != b[len(b)-1].ID {
			t.Fatalf("type query %s differs", typ)
		}
	}
	if viewCount(t, got) != viewCount(t, want) {
		t.Fatalf("models folded %d events, want %d", viewCount(t, got), viewCount(t, want))
	}
}

// TestImportBundleRefuses: a bundle of another key, a changed byte, and a log
// that is not empty are refused, naming the seq where one is at fault.
func TestImportBundleRefuses(t *testing.T) {
	_, bundle := importSource(t, 600)

	other, err := Open(Options{InMemory: true, Key: seedKey(t, "0101010101010101010101010101010101010101010101010101010101010101"), Ingest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.ImportBundle(context.Background(), bytes.NewReader(bundle), nil)
	var ce *ChainError
	if !errors.As(err, &ce) || !errors.Is(err, ErrBrokenChain) || ce.Seq != 1 {
		t.Fatalf("another key's bundle: %v, want ErrBrokenChain at seq 1", err)
	}
	if other.Tip().Seq != 0 {
		t.Fatalf("another key's bundle left %d events", other.Tip().Seq)
	}

	changed := bytes.Replace(bundle, []byte(`"i":450,`), []byte(`"i":451,`), 1)
	if bytes.Equal(changed, bundle) {
		t.Fatal("the test did not change the bundle")
	}
	l := openIngest(t, filepath.Join(t.TempDir(), "db"))
	defer l.Close()
	_, err = l.ImportBundle(context.Background(), bytes.NewReader(changed), nil)
	if !errors.As(err, &ce) || ce.Seq != 451 {
		t.Fatalf("changed event: %v, want a fault at seq 451", err)
	}
	if tip := l.Tip().Seq; tip >= 451 {
		t.Fatalf("the changed event was stored: tip %d", tip)
	}

	full := openMem(t, Options{})
	if _, err := full.ImportBundle(context.Background(), bytes.NewReader(bundle), nil); err == nil {
		t.Fatal("import into a log with a genesis event succeeded")
	}
}

// TestIngestPlacesOnlyTheNextEvents: Ingest takes events that continue the
// tip, all of a call or none, and an empty ingest log takes no draft before
// its genesis.
func TestIngestPlacesOnlyTheNextEvents(t *testing.T) {
	src, _ := importSource(t, 300)
	var evs []*Event
	if err := src.Scan(1, 300, func(ev *Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{InMemory: true, Key: seedKey(t, vectorSeed), Ingest: true, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(context.Background(), draft("test.seq")); !errors.Is(err, ErrInvalidDraft) {
		t.Fatalf("append before the genesis event: %v", err)
	}
	if err := l.Ingest(context.Background(), evs[1:10]); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("events without their genesis: %v", err)
	}
	if err := l.Ingest(context.Background(), evs[:100]); err != nil {
		t.Fatal(err)
	}
	// A gap, then a call whose last event is bad: nothing of either is added.
	if err := l.Ingest(context.Background(), evs[101:120]); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("a gap: %v", err)
	}
	bad := *evs[150]
	bad.Signature = evs[151].Signature
	batch := append(append([]*Event{}, evs[100:150]...), &bad)
	if err := l.Ingest(context.Background(), batch); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("a bad signature: %v", err)
	}
	if tip := l.Tip().Seq; tip != 100 {
		t.Fatalf("tip %d after refused calls, want 100", tip)
	}
	if err := l.Ingest(context.Background(), evs[100:]); err != nil {
		t.Fatal(err)
	}
	sameLog(t, src, l)
}

// TestImportChainIsTheSameLog: a log filled from another log's chain holds its
// events byte for byte, the same tip, root, Merkle tree and read models, and
// the report is Verify's.
func TestImportChainIsTheSameLog(t *testing.T) {
	src, _ := importSource(t, 2500)
	want, err := src.Verify(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := openIngest(t, filepath.Join(t.TempDir(), "db"))
	defer l.Close()
	var seen uint64
	rep, err := l.ImportChain(context.Background(), src, func(seq uint64) { seen = seq })
	if err != nil {
		t.Fatal(err)
	}
	if rep != want || seen != 2500 {
		t.Fatalf("report %+v, progress reached %d; want %+v and 2500", rep, seen, want)
	}
	sameLog(t, src, l)
}

// TestImportChainRefuses: a chain with a changed event is refused naming its
// seq, as Verify names it, with nothing of it or after it added; another
// key's log and a log that is not empty are refused.
func TestImportChainRefuses(t *testing.T) {
	src, _ := importSource(t, 3000)
	v := storedEvent(t, src, 2100)
	v[len(v)-10] = map[bool]byte{true: 'B', false: 'A'}[v[len(v)-10] == 'A']
	if err := src.db.Set(eventKey(2100), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	l := openIngest(t, filepath.Join(t.TempDir(), "db"))
	defer l.Close()
	_, err := l.ImportChain(context.Background(), src, nil)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Seq != 2100 {
		t.Fatalf("a changed signature: %v, want a chain error at seq 2100", err)
	}
	if tip := l.Tip().Seq; tip >= 2100 {
		t.Fatalf("the changed event was stored: tip %d", tip)
	}

	other, err := Open(Options{InMemory: true, Key: seedKey(t, "0101010101010101010101010101010101010101010101010101010101010101"), Ingest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ImportChain(context.Background(), src, nil); !errors.Is(err, ErrWrongKey) || other.Tip().Seq != 0 {
		t.Fatalf("another key's log: %v, tip %d", err, other.Tip().Seq)
	}
	if _, err := l.ImportChain(context.Background(), src, nil); err == nil {
		t.Fatal("import into a log that holds events succeeded")
	}
}
