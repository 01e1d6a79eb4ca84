package eventlog

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// resigned is the stored form of the event at seq of l with its payload
// replaced and a valid id and signature by key: an event the node's key
// could have written in its place, which no check of the event alone can
// tell from the original.
func resigned(t *testing.T, l *Log, key ed25519.PrivateKey, seq uint64, payload string) []byte {
	t.Helper()
	var ev Event
	if err := json.Unmarshal(storedEvent(t, l, seq), &ev); err != nil {
		t.Fatal(err)
	}
	canon, err := canonicalPayload(json.RawMessage(payload))
	if err != nil {
		t.Fatal(err)
	}
	u := signedBytes(nil, ev.NodeDID, canon, ev.PrevHash, ev.Seq, ev.Timestamp, ev.Type)
	return storedForm(u, hashID(u), ed25519.Sign(key, u))
}

// requireChainErrAt requires err to be a *ChainError of kind at seq whose
// reason contains reason.
func requireChainErrAt(t *testing.T, err error, kind error, seq uint64, reason string) {
	t.Helper()
	var ce *ChainError
	if !errors.As(err, &ce) || !errors.Is(err, kind) || ce.Seq != seq || !strings.Contains(ce.Reason, reason) {
		t.Fatalf("err = %v, want %v at seq %d with %q", err, kind, seq, reason)
	}
}

func TestCheckpointRecordedAndReadBack(t *testing.T) {
	dir := t.TempDir()
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.VerifiedMark(); ok || err != nil {
		t.Fatalf("a new log has a checkpoint: ok %v, err %v", ok, err)
	}
	for i := 2; i <= 10; i++ {
		mustAppend(t, l, draft("test.numbered", "n", i))
	}
	rep, err := l.Verify(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 1 {
		t.Fatalf("Verify reports From %d, want 1", rep.From)
	}
	at := time.Date(2026, 11, 21, 23, 5, 25, 123456789, time.FixedZone("x", 3600))
	cp, err := l.RecordVerified(rep, at)
	if err != nil {
		t.Fatal(err)
	}
	want := VerifiedMark{Seq: 10, ID: rep.TipHash, VerifiedAt: time.Date(2026, 11, 21, 22, 5, 25, 123456000, time.UTC)}
	if cp != want {
		t.Fatalf("recorded %+v, want %+v", cp, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Durable: a reopened log reads it back.
	l, err = Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, ok, err := l.VerifiedMark()
	if err != nil || !ok || got != want {
		t.Fatalf("read back %+v, %v, %v; want %+v", got, ok, err, want)
	}
	raw, closer, err := l.db.Get(metaVerifiedKey)
	if err != nil {
		t.Fatal(err)
	}
	wantRaw := `{"seq":10,"id":"` + rep.TipHash + `","verified_at":"2026-11-21T22:05:25.123456Z"}`
	if string(raw) != wantRaw {
		t.Errorf("stored value %s, want %s", raw, wantRaw)
	}
	closer.Close()

	// From the checkpoint, the events appended since are checked.
	mustAppend(t, l, draft("test.numbered", "n", 11), draft("test.numbered", "n", 12))
	since, err := l.VerifySince(context.Background(), got, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := l.Tip()
	if since.Events != 12 || since.From != 11 || since.TipHash != tip.ID || since.RootHash != rep.RootHash {
		t.Errorf("VerifySince = %+v, want 12 events from 11, tip %s, root %s", since, tip.ID, rep.RootHash)
	}
}

func TestRecordCheckpointRefusesPartialVerify(t *testing.T) {
	l := tenEvents(t)
	rep, err := l.VerifyFrom(context.Background(), 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != 5 || rep.Events != 10 {
		t.Fatalf("VerifyFrom(5) = %+v", rep)
	}
	if _, err := l.RecordVerified(rep, time.Now()); err == nil {
		t.Fatal("recorded a checkpoint from a verify that did not read the whole chain")
	}
	if _, ok, _ := l.VerifiedMark(); ok {
		t.Fatal("a refused checkpoint was stored")
	}
}

// TestVerifySinceFindsReplacedCheckpoint replaces the event at the checkpoint
// with another that the node's key signed: the event verifies on its own, and
// at the tip no later link gives it away, so only the recorded id can.
func TestVerifySinceFindsReplacedCheckpoint(t *testing.T) {
	key := seedKey(t, vectorSeed)
	cases := []struct {
		name   string
		cpSeq  uint64
		raw    func(t *testing.T, l *Log) []byte
		reason string
	}{
		{"re-signed at the tip", 10, func(t *testing.T, l *Log) []byte {
			return resigned(t, l, key, 10, `{"n":99}`)
		}, "was replaced since the full verify of 2026-11-21T22:05:25.000000Z"},
		{"re-signed below the tip", 7, func(t *testing.T, l *Log) []byte {
			return resigned(t, l, key, 7, `{"n":99}`)
		}, "was replaced since"},
		{"payload byte, id kept", 10, func(t *testing.T, l *Log) []byte {
			return replaceOnce(t, storedEvent(t, l, 10), `"n":10`, `"n":11`)
		}, "id does not match the event's content"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tenEvents(t)
			rep, err := l.VerifyFrom(context.Background(), 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 21, 22, 5, 25, 0, time.UTC)
			if _, err := l.RecordVerified(rep, at); err != nil {
				t.Fatal(err)
			}
			cp := VerifiedMark{Seq: tc.cpSeq, ID: eventID(t, l, tc.cpSeq), VerifiedAt: at}
			if _, err := l.VerifySince(context.Background(), cp, nil); err != nil {
				t.Fatalf("sound chain: %v", err)
			}
			if err := l.db.Set(eventKey(tc.cpSeq), tc.raw(t, l), pebble.Sync); err != nil {
				t.Fatal(err)
			}
			_, err = l.VerifySince(context.Background(), cp, nil)
			requireChainErrAt(t, err, ErrBrokenChain, tc.cpSeq, tc.reason)
		})
	}
}

// eventID is the stored id of the event at seq.
func eventID(t *testing.T, l *Log, seq uint64) string {
	t.Helper()
	ev, err := l.Event(seq)
	if err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

func TestVerifySinceFindsBadTail(t *testing.T) {
	l := tenEvents(t)
	cp := VerifiedMark{Seq: 4, ID: eventID(t, l, 4), VerifiedAt: time.Now()}
	v := storedEvent(t, l, 8)
	i := len(v) - 10
	v[i] = map[bool]byte{true: 'B', false: 'A'}[v[i] == 'A']
	if err := l.db.Set(eventKey(8), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_, err := l.VerifySince(context.Background(), cp, nil)
	requireChainErrAt(t, err, ErrBrokenChain, 8, "signature")

	// A checkpoint after the damage does not read it: it vouches for what
	// came before it.
	cp = VerifiedMark{Seq: 9, ID: eventID(t, l, 9), VerifiedAt: time.Now()}
	if _, err := l.VerifySince(context.Background(), cp, nil); err != nil {
		t.Errorf("VerifySince from seq 9 read seq 8: %v", err)
	}
}

// TestVerifySinceLostEvents: a checkpoint beyond the tip means events that a
// full verify saw are gone. (Opening such a store may refuse it first, for
// other reasons; VerifySince must not rely on that.)
func TestVerifySinceLostEvents(t *testing.T) {
	l := tenEvents(t)
	cp := VerifiedMark{Seq: 12, ID: eventID(t, l, 10), VerifiedAt: time.Now()}
	_, err := l.VerifySince(context.Background(), cp, nil)
	requireChainErrAt(t, err, ErrBrokenChain, 11, "reached seq 12, the tip is seq 10")
}

// TestVerifyFromWindow: VerifyFrom checks the genesis event, the event before
// from, and everything from from on; nothing else.
func TestVerifyFromWindow(t *testing.T) {
	cases := []struct {
		name    string
		damaged uint64
		from    uint64
		wantSeq uint64 // 0: no fault expected
	}{
		{"in the window", 8, 5, 8},
		{"the link before the window", 4, 5, 4},
		{"below the window", 3, 5, 0},
		{"genesis", 1, 9, 1},
		{"the tip alone", 10, 11, 10},
		{"full walk", 2, 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tenEvents(t)
			v := storedEvent(t, l, tc.damaged)
			if tc.damaged == 1 {
				v = replaceOnce(t, v, `"created_at":"`, `"created_at":"1`)
			} else {
				v = replaceOnce(t, v, `"n":`, `"n":1`)
			}
			if err := l.db.Set(eventKey(tc.damaged), v, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			var seen []uint64
			rep, err := l.VerifyFrom(context.Background(), tc.from, func(seq uint64) { seen = append(seen, seq) })
			if tc.wantSeq == 0 {
				if err != nil || rep.From != tc.from || rep.Events != 10 {
					t.Fatalf("VerifyFrom(%d) = %+v, %v; want a sound report from %d", tc.from, rep, err, tc.from)
				}
				if len(seen) != int(10-tc.from+1) || seen[0] != tc.from {
					t.Errorf("progress saw %v, want %d..10", seen, tc.from)
				}
				return
			}
			requireChainErrAt(t, err, ErrBrokenChain, tc.wantSeq, "id does not match")
		})
	}
	l := tenEvents(t)
	if _, err := l.VerifyFrom(context.Background(), 12, nil); err == nil {
		t.Error("VerifyFrom past the tip succeeded")
	}
}
