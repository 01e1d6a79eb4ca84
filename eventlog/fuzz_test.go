package eventlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// FuzzDecodeEvent feeds arbitrary bytes to the observer's event decoding and
// canonicalisation. Whatever is accepted must canonicalise to valid JSON that
// decodes back to the same fields, and canonicalising twice must be stable.
func FuzzDecodeEvent(f *testing.F) {
	golden, _ := os.ReadFile("testdata/golden/events.jsonl")
	for _, line := range bytes.Split(golden, []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"seq":1,"payload":{"a":1e400}}`))
	f.Add([]byte(`{"payload":{"\ud800":"x"},"type":"a.b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev Event
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		u, err := canonicalSigned(&ev)
		if err != nil {
			return
		}
		var back Event
		if err := json.Unmarshal(u, &back); err != nil {
			t.Fatalf("canonical bytes are not JSON: %v\n%s", err, u)
		}
		if back.Seq != ev.Seq || back.Type != ev.Type || back.PrevHash != ev.PrevHash ||
			back.Timestamp != ev.Timestamp || back.NodeDID != ev.NodeDID {
			t.Fatalf("canonical bytes changed a field:\n%s", u)
		}
		back.ID = ev.ID
		u2, err := canonicalSigned(&back)
		if err != nil || !bytes.Equal(u, u2) {
			t.Fatalf("canonicalisation not stable: %v\n%s\n%s", err, u, u2)
		}
	})
}

// FuzzVerifyBundle: arbitrary input never panics or hangs the verifier, and
// anything accepted really is a chain signed by the key its genesis names.
func FuzzVerifyBundle(f *testing.F) {
	golden, _ := os.ReadFile("testdata/golden/bundle.json")
	f.Add(golden)
	f.Add(bytes.Replace(golden, []byte(`"seq":2`), []byte(`"seq":3`), 1))
	f.Add(golden[:len(golden)/3])
	f.Add([]byte(`{"events":[]}`))
	f.Add([]byte(`{"events":[{"seq":1}],"event_count":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := VerifyBundle(context.Background(), bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		if rep.EventCount == 0 || rep.RootHash == "" || rep.TipHash == "" {
			t.Fatalf("accepted a bundle without a chain: %+v", rep)
		}
		checkSignedByGenesisKey(t, data, rep)
	})
}

// checkSignedByGenesisKey re-checks a bundle VerifyBundle accepted, by another
// road than its own: encoding/json and gowebpki/jcs rebuild each event's
// signed bytes, and every event must link to the one before it, carry the id
// those bytes hash to and a signature over them by the key the genesis payload
// names, which is the key of the report's node.
func checkSignedByGenesisKey(t *testing.T, data []byte, rep BundleReport) {
	t.Helper()
	var b struct {
		Events []Event `json:"events"`
	}
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("accepted a bundle encoding/json cannot read: %v", err)
	}
	if uint64(len(b.Events)) != rep.EventCount || len(b.Events) == 0 {
		t.Fatalf("accepted %d events, the report says %d", len(b.Events), rep.EventCount)
	}
	var genesis GenesisPayload
	if err := json.Unmarshal(b.Events[0].Payload, &genesis); err != nil {
		t.Fatalf("accepted a genesis payload encoding/json cannot read: %v", err)
	}
	pub, err := base64.StdEncoding.DecodeString(genesis.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize || DIDKey(pub) != rep.NodeDID {
		t.Fatalf("the genesis names key %q, not the key of %s", genesis.PublicKey, rep.NodeDID)
	}
	prev := strings.Repeat("0", 64)
	for i, ev := range b.Events {
		unsigned, err := json.Marshal(map[string]any{"type": ev.Type, "timestamp": ev.Timestamp,
			"prev_hash": ev.PrevHash, "payload": ev.Payload, "seq": ev.Seq, "node_did": ev.NodeDID})
		if err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
		u, err := jcs.Transform(unsigned)
		if err != nil {
			t.Fatalf("event %d: jcs: %v", i+1, err)
		}
		sum := sha256.Sum256(u)
		sig, _ := base64.StdEncoding.DecodeString(ev.Signature)
		switch {
		case ev.Seq != uint64(i+1) || ev.PrevHash != prev || ev.NodeDID != rep.NodeDID:
			t.Fatalf("accepted event %d with seq %d, prev_hash %s, node %s", i+1, ev.Seq, ev.PrevHash, ev.NodeDID)
		case hex.EncodeToString(sum[:]) != ev.ID:
			t.Fatalf("accepted event %d whose id is not the hash of its signed bytes", i+1)
		case !ed25519.Verify(pub, u, sig):
			t.Fatalf("accepted event %d not signed by the genesis key", i+1)
		}
		prev = ev.ID
	}
	if prev != rep.TipHash || b.Events[0].ID != rep.RootHash {
		t.Fatalf("report root %s tip %s, events %s … %s", rep.RootHash, rep.TipHash, b.Events[0].ID, prev)
	}
}

// FuzzReserializedBundle re-serialises a valid bundle by fuzzed choices (indent,
// key order, escapes, number form, stray whitespace) and requires the copy to
// verify to the same chain; and, when the fuzzer also picks a tamper (a payload
// value, a signature, a prev_hash) and a seq, requires the copy to fail at that
// seq. The tamper changes a value, not bytes, so it holds whatever the writing.
func FuzzReserializedBundle(f *testing.F) {
	l := openMem(f, Options{})
	mustAppend(f, l,
		draft("mission.created", "title", "Convoy éscort — zone 7 🚀 </script> & \u2028", "n", 9007199254740991,
			"neg", -42, "frac", 0.1, "exp", 1e21, "big", uint64(1)<<63, "nested", map[string]any{"z": []any{true, nil, "\x01\x7f/"}, "€": 1, "a": "\"q\"\\"}),
		draft("mission.accepted", "claimer", "enforcer-one", "empty", map[string]any{}, "list", []any{}),
		draft("test.numbered", "n", 4),
	)
	var buf bytes.Buffer
	want, err := l.WriteBundle(context.Background(), &buf, BundleHeader{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	bundle := buf.Bytes()
	f.Add(uint8(0), uint64(0), uint8(0), uint8(0))
	f.Add(uint8(0b0101_0101), uint64(1), uint8(0), uint8(0))
	f.Add(uint8(0b1111_1111), uint64(7), uint8(1), uint8(0))
	f.Add(uint8(0b0010_0110), uint64(42), uint8(2), uint8(2))
	f.Add(uint8(0b1001_1011), uint64(3), uint8(3), uint8(3))
	f.Fuzz(func(t *testing.T, choice uint8, seed uint64, tamper, at uint8) {
		doc, err := decodeOrdered(bundle)
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		re := reencoding{
			indent:  [...]string{"", "  ", "    ", "\t"}[choice&3],
			colon:   [...]string{"", " "}[seed>>1&1],
			comma:   [...]string{"", " "}[seed>>2&1],
			keys:    [...]keyOrder{keysAsWritten, keysReversed, keysShuffled, keysShuffled}[choice>>2&3],
			escape:  escapeMode(choice >> 4 & 3),
			numbers: numberForm(choice >> 6 & 1),
			upper:   choice>>7 == 1,
			noise:   seed&1 == 1,
			rnd:     rnd,
		}
		events := doc.member("events").elems
		seq := 1 + int(at)%len(events)
		ev := events[seq-1]
		switch tamper % 4 {
		case 1:
			changeValue(ev.member("payload"))
		case 2:
			sig := ev.member("signature")
			b, err := base64.StdEncoding.DecodeString(sig.text)
			if err != nil {
				t.Fatal(err)
			}
			b[int(seed%64)] ^= 1 << (seed >> 6 % 8)
			sig.text = base64.StdEncoding.EncodeToString(b)
		case 3:
			prev := ev.member("prev_hash")
			prev.text = map[bool]string{true: "1", false: "0"}[prev.text[0] == '0'] + prev.text[1:]
		}
		written := re.encode(doc)
		rep, err := VerifyBundle(context.Background(), bytes.NewReader(written), nil)
		if tamper%4 == 0 {
			if err != nil || rep.TipHash != want.TipHash || rep.RootHash != want.RootHash || rep.EventCount != want.EventCount {
				t.Fatalf("a faithful copy does not verify to the same chain: %+v, %v\n%s", rep, err, written)
			}
			return
		}
		var ce *ChainError
		if !errors.As(err, &ce) || !errors.Is(err, ErrBrokenChain) || ce.Seq != uint64(seq) {
			t.Fatalf("tamper %d at seq %d: err = %v\n%s", tamper%4, seq, err, written)
		}
	})
}

// changeValue changes the first value in n to a different one of the same
// shape, or adds a member to an empty object.
func changeValue(n *jsonNode) {
	switch {
	case (n.kind == '{' || n.kind == '[') && len(n.elems) > 0:
		changeValue(n.elems[0])
	case n.kind == '{':
		n.keys, n.elems = []string{"x"}, []*jsonNode{{kind: '0', text: "1"}}
	case n.kind == '[':
		n.elems = []*jsonNode{{kind: '0', text: "1"}}
	case n.kind == '"':
		n.text += "!"
	case n.kind == '0':
		n.text = map[bool]string{true: "54321", false: "12345"}[n.text == "12345"]
	case n.text == "true":
		n.text = "false"
	default: // false or null
		n.text = "true"
	}
}
