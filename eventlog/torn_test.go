package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

// crashImage writes a chain in groups of the given sizes, one Append each,
// and copies the store while the log is still open and idle: the copy is what
// a SIGKILL would leave, every append durable and no trailer on the log. The
// last group is large, so its record spans several 32 KiB blocks. It returns
// the copy and the tip after each record of the newest log, genesis first.
func crashImage(t *testing.T, groups []int) (img string, tips []uint64) {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tips = []uint64{1}
	h := sha256.Sum256([]byte("torn"))
	for _, n := range groups {
		drafts := make([]Draft, n)
		for i := range drafts {
			var pad strings.Builder
			for range 8 {
				h = sha256.Sum256(h[:])
				pad.WriteString(hex.EncodeToString(h[:]))
			}
			drafts[i] = draft("test.torn", "pad", pad.String())
		}
		evs := mustAppend(t, l, drafts...)
		tips = append(tips, evs[len(evs)-1].Seq)
	}
	img = t.TempDir()
	copyDir(t, dir, img)
	return img, tips
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// newestWAL is the path of the newest write-ahead log in dir, and the offset
// at which each of its records starts.
func newestWAL(t *testing.T, dir string) (path string, starts []int64) {
	t.Helper()
	logs, err := wal.Scan(wal.Dir{FS: vfs.Default, Dirname: dir})
	if err != nil || len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s (%v)", dir, err)
	}
	r := logs[len(logs)-1].OpenForRead()
	defer r.Close()
	for {
		_, off, err := r.NextRecord()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read the write-ahead log: %v", err)
		}
		path = off.PhysicalFile
		starts = append(starts, off.Physical)
	}
	return path, starts
}

// openCaptured opens the log in dir with its messages captured.
func openCaptured(t *testing.T, dir string) (*Log, *bytes.Buffer, error) {
	t.Helper()
	var buf bytes.Buffer
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed), Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err == nil {
		t.Cleanup(func() { l.Close() })
	}
	return l, &buf, err
}

// TestTornTail cuts the newest write-ahead log of a crashed store at several
// points inside its last records, as a process killed in the middle of a
// write leaves it. Each time Open reports a torn tail with the seq it
// recovered to, the chain verifies, every event of the records before the cut
// is there, the log takes writes again, and the next Open finds nothing to
// report. A cut exactly between two records leaves nothing to see.
func TestTornTail(t *testing.T) {
	img, tips := crashImage(t, []int{1, 3, 7, 2, 5, 90})
	walPath, starts := newestWAL(t, img)
	if len(starts) != len(tips) {
		t.Fatalf("the log holds %d records, want genesis and %d groups", len(starts), len(tips)-1)
	}
	fi, err := os.Stat(walPath)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	last := starts[len(starts)-1]
	if size-last < 2*walBlockSize {
		t.Fatalf("the last record is %d bytes, want one over several blocks", size-last)
	}
	secondBlock := (last/walBlockSize + 1) * walBlockSize
	for _, c := range []struct {
		name string
		cut  int64 // the length the log is cut to
		torn bool
		rec  int // the last whole record left
	}{
		{"the last byte", size - 1, true, len(starts) - 2},
		{"inside the last chunk", size - 700, true, len(starts) - 2},
		{"inside the first chunk's header", last + 5, true, len(starts) - 2},
		{"just after the first chunk's header", last + walHeaderSize + 3, true, len(starts) - 2},
		{"after a whole first chunk", secondBlock, true, len(starts) - 2},
		{"inside a middle chunk's header", secondBlock + 4, true, len(starts) - 2},
		{"inside the record before", last - 100, true, len(starts) - 3},
		{"between two records", last, false, len(starts) - 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, img, dir)
			if err := os.Truncate(filepath.Join(dir, filepath.Base(walPath)), c.cut); err != nil {
				t.Fatal(err)
			}
			l, logs, err := openCaptured(t, dir)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			want := tips[c.rec]
			if tip := l.Tip().Seq; tip != want {
				t.Fatalf("recovered to seq %d, want %d", tip, want)
			}
			tt := l.TornTail()
			switch {
			case !c.torn && tt != nil:
				t.Fatalf("torn tail reported for a cut between records: %v", tt)
			case c.torn && tt == nil:
				t.Fatal("no torn tail reported")
			case c.torn:
				if tt.Seq != want || tt.Offset != starts[c.rec+1] || tt.Bytes != c.cut-starts[c.rec+1] || !errors.Is(tt, ErrTornTail) {
					t.Errorf("torn tail %+v, want seq %d, offset %d, %d bytes", tt, want, starts[c.rec+1], c.cut-starts[c.rec+1])
				}
				msg := fmt.Sprintf("torn tail: the newest write of the last run was cut short and never acknowledged; recovered to seq %d", want)
				if !strings.Contains(tt.Error(), msg) || !strings.Contains(logs.String(), "level=WARN msg=\""+msg) {
					t.Errorf("report %q, log %q; want %q", tt.Error(), logs.String(), msg)
				}
			}
			if strings.Contains(logs.String(), "corrupt") {
				t.Errorf("a torn tail was logged as corruption: %s", logs.String())
			}
			rep, err := l.Verify(context.Background(), nil)
			if err != nil || rep.Events != want {
				t.Fatalf("verify: %d events, %v; want %d", rep.Events, err, want)
			}
			after := mustAppend(t, l, draft("test.after", "n", 1))
			if after[0].Seq != want+1 {
				t.Errorf("the next append got seq %d, want %d", after[0].Seq, want+1)
			}
			l.Close()
			l, _, err = openCaptured(t, dir)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			if tt := l.TornTail(); tt != nil || l.Tip().Seq != want+1 {
				t.Errorf("reopen: torn tail %v, tip %d; want none and %d", tt, l.Tip().Seq, want+1)
			}
		})
	}
}

// TestTornTailOfAClosedLog: a log closed cleanly ends with a trailer. Cutting
// into the trailer loses nothing and reports nothing; cutting through it into
// the last record is a torn tail.
func TestTornTailOfAClosedLog(t *testing.T) {
	dir := t.TempDir()
	l, _, err := openCaptured(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, draft("test.a", "n", 1))
	mustAppend(t, l, draft("test.b", "n", 2), draft("test.b", "n", 3))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	walPath, _ := newestWAL(t, dir)
	fi, err := os.Stat(walPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cut  int64
		torn bool
		tip  uint64
	}{
		{fi.Size() - 5, false, 4},
		{fi.Size() - walHeaderSize, false, 4},
		{fi.Size() - walHeaderSize - 20, true, 2},
	} {
		img := t.TempDir()
		copyDir(t, dir, img)
		if err := os.Truncate(filepath.Join(img, filepath.Base(walPath)), c.cut); err != nil {
			t.Fatal(err)
		}
		l, _, err := openCaptured(t, img)
		if err != nil {
			t.Fatalf("cut to %d: %v", c.cut, err)
		}
		if got := l.TornTail() != nil; got != c.torn || l.Tip().Seq != c.tip {
			t.Errorf("cut to %d of %d: torn %v, tip %d; want %v, %d", c.cut, fi.Size(), got, l.Tip().Seq, c.torn, c.tip)
		}
	}
}

// TestDamagedWALIsNotATornTail flips one byte of a record in the middle of
// the newest write-ahead log. Pebble alone opens such a store and silently
// drops that record and every acknowledged one after it; Open refuses it as
// ErrCorrupt naming the log, and does not call it a torn tail.
func TestDamagedWALIsNotATornTail(t *testing.T) {
	img, tips := crashImage(t, []int{2, 2, 2, 2, 2, 2, 2, 2, 40})
	walPath, starts := newestWAL(t, img)
	at := starts[4] + walHeaderSize + 40 // inside the payload of the 4th group's record
	flipped := func() string {
		dir := t.TempDir()
		copyDir(t, img, dir)
		p := filepath.Join(dir, filepath.Base(walPath))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[at] ^= 0x01
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	// What the check prevents.
	db, err := pebble.Open(flipped(), &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("pebble alone: %v", err)
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceEvent}, UpperBound: []byte{spaceEvent + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !it.Last() || u64(it.Key()[1:]) != tips[3] {
		t.Errorf("pebble alone recovered to %x, expected it to stop silently at seq %d", it.Key(), tips[3])
	}
	it.Close()
	db.Close()

	dir := flipped()
	_, logs, err := openCaptured(t, dir)
	var ce *ChainError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || errors.Is(err, ErrTornTail) {
		t.Fatalf("open: %v, want ErrCorrupt", err)
	}
	want := fmt.Sprintf("corrupt store: cannot read %s: damaged at offset %d, with records written after it (damage, not a torn write)",
		filepath.Join(dir, filepath.Base(walPath)), starts[4])
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
	if strings.Contains(logs.String(), "torn") {
		t.Errorf("damage was logged as a torn tail: %s", logs.String())
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// TestJudgeTail holds the rules of torn.go to hand-made tails: what follows
// the last whole record of log 7, which starts at offset from.
func TestJudgeTail(t *testing.T) {
	const num = 7
	chunk := func(kind byte, logNum uint32, payload string) []byte {
		b := make([]byte, walHeaderSize+len(payload))
		binary.LittleEndian.PutUint16(b[4:], uint16(len(payload)))
		b[6] = kind
		binary.LittleEndian.PutUint32(b[7:], logNum)
		copy(b[walHeaderSize:], payload)
		sum := crc32.Checksum(b[6:], walCRCTable)
		binary.LittleEndian.PutUint32(b, (sum>>15|sum<<17)+0xa282ead8)
		return b
	}
	const full, first, middle, last = 5, 6, 7, 8
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	pad := func(n int) []byte { return make([]byte, n) }
	rec := chunk(full, num, "a whole record")
	for _, c := range []struct {
		name string
		from int64
		tail []byte
		want tailVerdict
	}{
		{"nothing", 0, nil, tailClean},
		{"zeros", 0, pad(40), tailClean},
		{"a partial header", 0, rec[:5], tailTorn},
		{"a partial payload", 0, rec[:walHeaderSize+4], tailTorn},
		{"a first chunk without its last", walBlockSize - walHeaderSize - 20, chunk(first, num, strings.Repeat("x", 20)), tailTorn},
		{"first and middle without last", walBlockSize - walHeaderSize - 20,
			cat(chunk(first, num, strings.Repeat("x", 20)), chunk(middle, num, strings.Repeat("y", walBlockSize-walHeaderSize))), tailTorn},
		{"the trailer of a closed log, cut", 0, []byte{0, 0, 0, 0, 0, 0, walKindEOF, num + 1, 0}, tailClean},
		{"a recycled log's older chunks", 0, cat(chunk(full, num-3, "old"), chunk(full, num-3, "older")), tailClean},
		{"a torn chunk, then older bytes", 0, cat(flip(rec, walHeaderSize+2), chunk(full, num-3, "old")), tailTorn},
		{"a cut chunk of a 19-byte header", 0, cat(rec[:6], []byte{9, num, 0, 0, 0, 1, 2}), tailTorn},
		{"a bad chunk, then a whole one in its block", 0, cat(flip(rec, walHeaderSize+2), rec), tailDamaged},
		{"a bad header, then a whole chunk in the next block", walBlockSize - 100,
			cat(flip(rec, 5), pad(100-len(rec)), chunk(last, num, "rest")), tailDamaged},
		{"a bad last record, alone", 0, flip(rec, walHeaderSize+2), tailTorn},
		{"padding, then a partial header", walBlockSize - 6, cat(pad(6), rec[:3]), tailTorn},
		{"padding that is not zeros, then a whole record", walBlockSize - 6, cat(flip(pad(6), 2), rec), tailDamaged},
	} {
		if got, _ := judgeTail(c.tail, c.from, num); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
}
