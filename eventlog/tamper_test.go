package eventlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// tenEvents returns a log holding genesis plus nine events with payload {"n":seq}.
func tenEvents(t *testing.T) *Log {
	l := openMem(t, Options{})
	for i := 2; i <= 10; i++ {
		mustAppend(t, l, draft("test.numbered", "n", i))
	}
	return l
}

type bundleParts struct {
	head   map[string]json.RawMessage
	events []json.RawMessage
}

func exportParts(t *testing.T, l *Log) bundleParts {
	t.Helper()
	var buf bytes.Buffer
	if _, err := l.WriteBundle(context.Background(), &buf, BundleHeader{}, nil); err != nil {
		t.Fatal(err)
	}
	var p bundleParts
	if err := json.Unmarshal(buf.Bytes(), &p.head); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(p.head["events"], &p.events); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p bundleParts) encode() []byte {
	h := make(map[string]json.RawMessage, len(p.head))
	for k, v := range p.head {
		h[k] = v
	}
	h["events"], _ = json.Marshal(p.events)
	b, _ := json.Marshal(h)
	return b
}

func replaceOnce(t *testing.T, b []byte, old, new string) json.RawMessage {
	t.Helper()
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%q not in %s", old, b)
	}
	return bytes.Replace(slices.Clone(b), []byte(old), []byte(new), 1)
}

// Each tamper is applied to the bundle's events (index = seq-1) and must be
// detected at wantSeq.
var tampers = []struct {
	name    string
	wantSeq uint64
	apply   func(t *testing.T, evs []json.RawMessage) []json.RawMessage
}{
	{"payload byte", 5, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		evs[4] = replaceOnce(t, evs[4], `"n":5`, `"n":6`)
		return evs
	}},
	{"signature byte", 6, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		var ev Event
		json.Unmarshal(evs[5], &ev)
		sig := []byte(ev.Signature)
		sig[10] ^= 1
		if sig[10] == '+' || sig[10] == '/' { // stay valid base64
			sig[10] = 'A'
		}
		evs[5] = replaceOnce(t, evs[5], ev.Signature, string(sig))
		return evs
	}},
	{"prev_hash byte", 7, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		var ev Event
		json.Unmarshal(evs[6], &ev)
		bad := []byte(ev.PrevHash)
		bad[0] = "01"[min(1, int(bad[0]-'0')&1)]
		if string(bad) == ev.PrevHash {
			bad[0] = 'f'
		}
		evs[6] = replaceOnce(t, evs[6], `"prev_hash":"`+ev.PrevHash, `"prev_hash":"`+string(bad))
		return evs
	}},
	{"dropped event", 4, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		return append(evs[:3], evs[4:]...)
	}},
	{"reordered pair", 8, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		evs[7], evs[8] = evs[8], evs[7]
		return evs
	}},
	{"genesis payload", 1, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		evs[0] = replaceOnce(t, evs[0], `"created_at":"`, `"created_at":"1`)
		return evs
	}},
	{"tip event", 10, func(t *testing.T, evs []json.RawMessage) []json.RawMessage {
		evs[9] = replaceOnce(t, evs[9], `"type":"test.numbered"`, `"type":"test.renumbered"`)
		return evs
	}},
}

// TestVerifyBundleTamper runs every tamper on the bundle as written and on its
// re-serialisations (reserialize_test.go): a copy written another way must fail
// at the same seq as the original.
func TestVerifyBundleTamper(t *testing.T) {
	l := tenEvents(t)
	clean := exportParts(t, l)
	eachCopy(t, clean.encode(), func(t *testing.T, b []byte) {
		if _, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil); err != nil {
			t.Fatalf("clean bundle: %v", err)
		}
	})
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			p := exportParts(t, l)
			p.events = tc.apply(t, p.events)
			eachCopy(t, p.encode(), func(t *testing.T, b []byte) {
				_, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil)
				var ce *ChainError
				if !errors.As(err, &ce) || !errors.Is(err, ErrBrokenChain) || ce.Seq != tc.wantSeq {
					t.Fatalf("err = %v, want broken chain at seq %d", err, tc.wantSeq)
				}
			})
		})
	}
}

func TestVerifyBundleFrame(t *testing.T) {
	l := tenEvents(t)
	cases := []struct {
		name  string
		apply func(t *testing.T, p bundleParts)
	}{
		{"signature", func(t *testing.T, p bundleParts) {
			p.head["bundle_signature"] = json.RawMessage(`"` + l.Tip().ID[:43] + `=="`)
		}},
		{"generated_at", func(t *testing.T, p bundleParts) {
			p.head["generated_at"] = json.RawMessage(`"2030-01-01T00:00:00.000000Z"`)
		}},
		{"tip hash", func(t *testing.T, p bundleParts) { p.head["chain_tip_hash"] = p.head["chain_root_hash"] }},
		{"root hash", func(t *testing.T, p bundleParts) { p.head["chain_root_hash"] = p.head["chain_tip_hash"] }},
		{"event count", func(t *testing.T, p bundleParts) { p.head["event_count"] = json.RawMessage(`11`) }},
		{"node did", func(t *testing.T, p bundleParts) {
			other := seedKey(t, fmt.Sprintf("%064x", 9)).Public().(ed25519.PublicKey)
			p.head["node_did"] = json.RawMessage(`"` + DIDKey(other) + `"`)
		}},
		{"unknown field", func(t *testing.T, p bundleParts) { p.head["extra"] = json.RawMessage(`1`) }},
		{"missing field", func(t *testing.T, p bundleParts) { delete(p.head, "export_id") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := exportParts(t, l)
			tc.apply(t, p)
			eachCopy(t, p.encode(), func(t *testing.T, b []byte) {
				_, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil)
				if !errors.Is(err, ErrBadBundle) {
					t.Fatalf("err = %v, want a bad bundle", err)
				}
			})
		})
	}
	// A truncated bundle and a tail of another chain are rejected too.
	p := exportParts(t, l)
	b := p.encode()
	if _, err := VerifyBundle(context.Background(), bytes.NewReader(b[:len(b)/2]), nil); err == nil {
		t.Error("truncated bundle verified")
	}
	p.events = p.events[1:]
	eachCopy(t, p.encode(), func(t *testing.T, b []byte) {
		if _, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil); err == nil {
			t.Error("bundle without genesis verified")
		}
	})
}

// storeEvents exposes the raw stored events of the local log for tampering.
func storedEvent(t *testing.T, l *Log, seq uint64) []byte {
	v, closer, err := l.db.Get(eventKey(seq))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return slices.Clone(v)
}

func TestVerifyLocalTamper(t *testing.T) {
	type op func(t *testing.T, l *Log)
	set := func(seq uint64, v []byte) op {
		return func(t *testing.T, l *Log) { l.db.Set(eventKey(seq), v, pebble.Sync) }
	}
	cases := []struct {
		name    string
		wantSeq uint64
		do      func(t *testing.T, l *Log)
	}{
		{"payload byte", 5, func(t *testing.T, l *Log) {
			set(5, replaceOnce(t, storedEvent(t, l, 5), `"n":5`, `"n":7`))(t, l)
		}},
		{"signature byte", 6, func(t *testing.T, l *Log) {
			v := storedEvent(t, l, 6)
			i := len(v) - 10
			v[i] = map[bool]byte{true: 'B', false: 'A'}[v[i] == 'A']
			set(6, v)(t, l)
		}},
		{"dropped event", 4, func(t *testing.T, l *Log) { l.db.Delete(eventKey(4), pebble.Sync) }},
		{"reordered pair", 8, func(t *testing.T, l *Log) {
			a, b := storedEvent(t, l, 8), storedEvent(t, l, 9)
			set(8, b)(t, l)
			set(9, a)(t, l)
		}},
		{"garbage", 3, func(t *testing.T, l *Log) { set(3, []byte("{not json"))(t, l) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tenEvents(t)
			if _, err := l.Verify(context.Background(), nil); err != nil {
				t.Fatalf("clean chain: %v", err)
			}
			tc.do(t, l)
			_, err := l.Verify(context.Background(), nil)
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Seq != tc.wantSeq {
				t.Fatalf("err = %v, want a chain error at seq %d", err, tc.wantSeq)
			}
		})
	}
}

// TestOpenCorruptTail damages the newest events on disk; Open must refuse with
// ErrCorrupt naming the seq, never a "torn tail": every group is one atomic Pebble
// batch, so a complete record that fails a check was changed after it was written.
func TestOpenCorruptTail(t *testing.T) {
	cases := []struct {
		name    string
		wantSeq uint64
		damage  func(t *testing.T, db *pebble.DB, tip Event)
	}{
		{"truncated tip", 10, func(t *testing.T, db *pebble.DB, tip Event) {
			db.Set(eventKey(10), tip.Raw()[:len(tip.Raw())/2], pebble.Sync)
		}},
		{"missing index of tip", 10, func(t *testing.T, db *pebble.DB, tip Event) {
			db.Delete(timeKey(tip.Time().UnixMicro()), pebble.Sync)
		}},
		{"gap below tip", 9, func(t *testing.T, db *pebble.DB, tip Event) { db.Delete(eventKey(9), pebble.Sync) }},
		{"payload byte of a complete record", 8, func(t *testing.T, db *pebble.DB, tip Event) {
			v, closer, err := db.Get(eventKey(8))
			if err != nil {
				t.Fatal(err)
			}
			changed := replaceOnce(t, v, `"n":8`, `"n":9`)
			closer.Close()
			db.Set(eventKey(8), changed, pebble.Sync)
		}},
		{"signature byte of the tip", 10, func(t *testing.T, db *pebble.DB, tip Event) {
			v := slices.Clone(tip.Raw())
			i := len(v) - 10
			v[i] = map[bool]byte{true: 'B', false: 'A'}[v[i] == 'A']
			db.Set(eventKey(10), v, pebble.Sync)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			key := seedKey(t, vectorSeed)
			l, err := Open(Options{Dir: dir, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			var tip Event
			for i := 2; i <= 10; i++ {
				tip = mustAppend(t, l, draft("test.numbered", "n", i))[0]
			}
			l.Close()
			db, err := pebble.Open(dir, &pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, db, tip)
			db.Close()
			_, err = Open(Options{Dir: dir, Key: key})
			var ce *ChainError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Seq != tc.wantSeq {
				t.Fatalf("Open err = %v, want corrupt store at seq %d", err, tc.wantSeq)
			}
		})
	}
}

func TestOpenWrongKey(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, Key: seedKey(t, vectorSeed)})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	other := seedKey(t, fmt.Sprintf("%064x", 7))
	if _, err := Open(Options{Dir: dir, Key: other}); err == nil {
		t.Fatal("opened a chain with another node's key")
	}
}
