package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog/eventlogtest"
)

// damagedStore writes a chain of n events with incompressible payloads to a
// store on disk, flushes and compacts it into sstables, closes it, and flips one
// byte of event at's payload where the sstable holds it, as a failing disk
// would. The block checksum then fails for event at and its neighbours in the
// block.
func damagedStore(t *testing.T, n, at uint64) (dir string, sst string) {
	t.Helper()
	dir = t.TempDir()
	pads := writePadded(t, dir, n, nil)
	return dir, flipIn(t, dir, pads[at])
}

// writePadded writes a chain of n events of type test.padded, each with 512
// random hex characters as its pad, to a store in dir, through models if not
// nil, and leaves it flushed and compacted into sstables. It returns the pads
// by seq.
func writePadded(t *testing.T, dir string, n uint64, models Folder) map[uint64]string {
	t.Helper()
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed), Models: models})
	if err != nil {
		t.Fatal(err)
	}
	// Chained hashes as padding: Snappy finds no repeats in them, so the stored
	// bytes appear literally in the file.
	h := sha256.Sum256([]byte("pad"))
	pads := map[uint64]string{}
	var drafts []Draft
	for i := uint64(2); i <= n; i++ {
		var pad strings.Builder
		for range 8 {
			h = sha256.Sum256(h[:])
			pad.WriteString(hex.EncodeToString(h[:]))
		}
		pads[i] = pad.String()
		drafts = append(drafts, draft("test.padded", "n", i, "pad", pad.String()))
		if len(drafts) == 500 || i == n {
			mustAppend(t, l, drafts...)
			drafts = drafts[:0]
		}
	}
	if err := l.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return pads
}

// padModel keeps each padded event's pad in upper case, so the model's bytes
// differ from the event's.
type padModel struct{}

func (padModel) Version() string { return "pad-1" }

func (padModel) Fold(tx *ModelTxn, ev *Event) error {
	var p struct{ Pad string }
	if ev.Type != "test.padded" {
		return nil
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return err
	}
	tx.Set([]byte(fmt.Sprintf("pad/%d", ev.Seq)), []byte(strings.ToUpper(p.Pad)))
	return nil
}

// requireCorruptAt requires a *ChainError of ErrCorrupt whose seq range holds
// seq and whose reason names the damaged file.
func requireCorruptAt(t *testing.T, what string, err error, seq uint64, sst string) {
	t.Helper()
	var ce *ChainError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("%s: err = %v, want a corrupt store error", what, err)
	}
	if last := max(ce.Last, ce.Seq); ce.Seq == 0 || ce.Seq > seq || last < seq {
		t.Errorf("%s: %v: seqs %d..%d do not hold the damaged event %d", what, err, ce.Seq, ce.Last, seq)
	}
	if !strings.Contains(ce.Reason, filepath.Base(sst)) {
		t.Errorf("%s: %v does not name the damaged file %s", what, err, sst)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: message %q is not one line", what, err)
	}
}

// TestCorruptBlockAtOpen damages an event among the newest: Open refuses with
// ErrCorrupt naming the seqs it could not read and the file, and does not panic.
func TestCorruptBlockAtOpen(t *testing.T) {
	dir, sst := damagedStore(t, 300, 290)
	_, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed)})
	requireCorruptAt(t, "Open", err, 290, sst)
}

// TestCorruptBlockOnRead damages an event older than the tail that Open checks:
// the log opens, and the first read that reaches the damage fails with
// ErrCorrupt naming the seqs and the file. From then on the log is unhealthy and
// takes no writes, and an export stops without writing a sealed bundle.
func TestCorruptBlockOnRead(t *testing.T) {
	dir, sst := damagedStore(t, 3000, 100)
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed)})
	if err != nil {
		t.Fatalf("Open with the damage outside the tail check: %v", err)
	}
	defer l.Close()
	if err := l.Healthy(); err != nil {
		t.Fatalf("healthy before any read of the damage: %v", err)
	}
	if _, err := l.Event(2000); err != nil {
		t.Fatalf("an undamaged event: %v", err)
	}

	_, err = l.Verify(context.Background(), nil)
	requireCorruptAt(t, "Verify", err, 100, sst)
	if err := l.Healthy(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Healthy after a corrupt read = %v, want ErrCorrupt", err)
	}
	if _, err := l.Append(context.Background(), draft("test.after", "n", 1)); !errors.Is(err, ErrFailed) {
		t.Errorf("Append on a corrupt store: err = %v, want ErrFailed", err)
	}
	_, err = l.Event(100)
	requireCorruptAt(t, "Event", err, 100, sst)
	err = l.Scan(1, 3000, func(*Event) error { return nil })
	requireCorruptAt(t, "Scan", err, 100, sst)
	_, err = l.QueryRaw(context.Background(), Query{Limit: 3000}, func(uint64, []byte) (bool, error) { return true, nil })
	requireCorruptAt(t, "QueryRaw", err, 100, sst)

	var out bytes.Buffer
	_, err = l.WriteBundle(context.Background(), &out, BundleHeader{}, nil)
	requireCorruptAt(t, "WriteBundle", err, 100, sst)
	if _, err := VerifyBundle(context.Background(), bytes.NewReader(out.Bytes()), nil); err == nil {
		t.Error("the output of a failed export verifies as a bundle")
	}
	if bytes.Contains(out.Bytes(), []byte(`"bundle_signature"`)) {
		t.Error("a failed export wrote a seal")
	}
}

// TestCheckStoreFindsDamageOutsideEvents damages a read model's value, which
// neither Open nor the chain walk reads: CheckStore finds it, names the file,
// and fails the log.
func TestCheckStoreFindsDamageOutsideEvents(t *testing.T) {
	dir := t.TempDir()
	pads := writePadded(t, dir, 3000, padModel{})
	sst := flipIn(t, dir, strings.ToUpper(pads[2500]))
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed), Models: padModel{}})
	if err != nil {
		t.Fatalf("Open with a damaged read model value: %v", err)
	}
	defer l.Close()
	if _, err := l.Verify(context.Background(), nil); err != nil {
		t.Fatalf("Verify reads only the events, which are sound: %v", err)
	}
	if err := l.CheckStore(context.Background()); err != nil {
		var ce *ChainError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Seq != 0 || !strings.Contains(ce.Reason, filepath.Base(sst)) {
			t.Errorf("CheckStore: %v, want a corrupt store naming %s", err, sst)
		}
	} else {
		t.Error("CheckStore found no damage")
	}
	if err := l.Healthy(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Healthy after CheckStore met the damage: %v", err)
	}

	clean := t.TempDir()
	writePadded(t, clean, 300, padModel{})
	l2, err := Open(Options{Dir: clean, Key: seedKey(t, vectorSeed), Models: padModel{}})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.CheckStore(context.Background()); err != nil {
		t.Errorf("CheckStore of a sound store: %v", err)
	}
}

// flipIn damages the block of dir's sstables that holds pad.
func flipIn(t *testing.T, dir, pad string) string {
	t.Helper()
	sst, err := eventlogtest.FlipInSSTable(dir, pad)
	if err != nil {
		t.Fatal(err)
	}
	return sst
}
