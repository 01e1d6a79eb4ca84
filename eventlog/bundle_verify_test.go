package eventlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestVerifyPrettyPrintedBundle is a regression test: a
// bundle piped through `python3 -m json.tool` was rejected at seq 1 with "genesis
// payload does not carry the node's public key", because the genesis check looked
// for `"public_key":"…"` in the payload's bytes and json.tool writes `": "`. The
// genesis key here holds a '/', which some encoders also write as `\/`.
func TestVerifyPrettyPrintedBundle(t *testing.T) {
	l := openMem(t, Options{}) // vectorSeed: its public key is A6EHv/POEL4…
	mustAppend(t, l, draft("mission.created", "title", "Convoy éscort — zone 7 🚀"))
	var bundle bytes.Buffer
	if _, err := l.WriteBundle(context.Background(), &bundle, BundleHeader{}, nil); err != nil {
		t.Fatal(err)
	}
	n, err := decodeOrdered(bundle.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	jsonTool := reencoding{indent: "    ", colon: " ", escape: escapeNonASCII}.encode(n)
	if !bytes.Contains(jsonTool, []byte(`"public_key": "A6EHv/POEL4`)) {
		t.Fatalf("the copy is not indented as json.tool writes it:\n%s", jsonTool)
	}
	if _, err := VerifyBundle(context.Background(), bytes.NewReader(jsonTool), nil); err != nil {
		t.Fatalf("a json.tool copy of a valid bundle does not verify: %v", err)
	}
	solidus := reencoding{escape: escapeAll}.encode(n)
	if _, err := VerifyBundle(context.Background(), bytes.NewReader(solidus), nil); err != nil {
		t.Fatalf("a copy with every character escaped does not verify: %v", err)
	}
}

// handBundle signs and seals a chain of the given types and payloads as the log
// would, so that a test can make a chain the log never writes, such as a genesis
// event that does not name its key. Payloads are JSON objects.
func handBundle(t *testing.T, key ed25519.PrivateKey, events ...[2]string) []byte {
	t.Helper()
	did := DIDKey(key.Public().(ed25519.PublicKey))
	start, _ := time.Parse(TimeLayout, "2026-11-21T09:00:00.000000Z")
	var stored [][]byte
	prev, root := GenesisPrevHash, ""
	for i, e := range events {
		payload, err := canonicalPayload([]byte(e[1]))
		if err != nil {
			t.Fatal(err)
		}
		seq := uint64(i + 1)
		ts := start.Add(time.Duration(i) * time.Second).Format(TimeLayout)
		u := signedBytes(nil, did, payload, prev, seq, ts, e[0])
		id := hashID(u)
		stored = append(stored, storedForm(u, id, ed25519.Sign(key, u)))
		prev = hex.EncodeToString(id[:])
		if seq == 1 {
			root = prev
		}
	}
	gen := start.Add(time.Hour).Format(TimeLayout)
	seal := base64.StdEncoding.EncodeToString(ed25519.Sign(key, sealedBytes(root, prev, gen)))
	return fmt.Appendf(nil, `{"export_id":"hand","node_did":%q,"public_key":%q,"generated_at":%q,"events":[%s],`+
		`"chain_root_hash":%q,"chain_tip_hash":%q,"event_count":%d,"bundle_signature":%q}`,
		did, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)), gen, bytes.Join(stored, []byte(",")),
		root, prev, len(events), seal)
}

// TestVerifyBundleGenesisValues: the genesis check reads the payload's members
// by name. A key that only appears somewhere in the payload's bytes (where the
// old substring match found it) does not count, and the payload must name the
// event's own node.
func TestVerifyBundleGenesisValues(t *testing.T) {
	key := seedKey(t, vectorSeed)
	pub := base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
	did := DIDKey(key.Public().(ed25519.PublicKey))
	other := DIDKey(seedKey(t, fmt.Sprintf("%064x", 9)).Public().(ed25519.PublicKey))
	cases := []struct {
		name    string
		payload string
		ok      bool
	}{
		{"names its key and node", fmt.Sprintf(`{"node_did":%q,"public_key":%q,"created_at":"x"}`, did, pub), true},
		{"key only in a nested object", fmt.Sprintf(`{"node_did":%q,"old":{"public_key":%q}}`, did, pub), false},
		{"another node", fmt.Sprintf(`{"node_did":%q,"public_key":%q}`, other, pub), false},
		{"key not a string", fmt.Sprintf(`{"node_did":%q,"public_key":[%q]}`, did, pub), false},
		{"no node", fmt.Sprintf(`{"public_key":%q}`, pub), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := handBundle(t, key, [2]string{TypeGenesis, tc.payload}, [2]string{"test.note", `{"n":2}`})
			// The independent observer applies the same rule.
			if out, err := runObserver(t, b); (err == nil) != tc.ok || !tc.ok && !strings.Contains(out, "seq 1") {
				t.Errorf("verify-bundle.mjs: %v: %s", err, out)
			}
			eachCopy(t, b, func(t *testing.T, b []byte) {
				_, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil)
				var ce *ChainError
				switch {
				case tc.ok && err != nil:
					t.Fatalf("err = %v, want a valid bundle", err)
				case !tc.ok && (!errors.As(err, &ce) || ce.Seq != 1 || !errors.Is(err, ErrBrokenChain)):
					t.Fatalf("err = %v, want broken chain at seq 1", err)
				}
			})
		})
	}
}

// TestVerifyBundleEventMembers: an event is read by its members' exact names and
// values. encoding/json alone would fold "Seq" into seq and keep the last of two
// members of one name; neither is a copy of a signed event. A number is its
// value, so 2.0 is 2, but a string "2" is not a number.
func TestVerifyBundleEventMembers(t *testing.T) {
	golden, err := os.ReadFile("testdata/golden/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		old, new string
		wantSeq  uint64 // 0: the bundle verifies
		frame    bool   // a fault of the frame
	}{
		{"seq as 2.0", `"seq":2,`, `"seq":2.0,`, 0, false},
		{"seq as 2e0", `"seq":2,`, `"seq":2e0,`, 0, false},
		{"event_count as 3.0", `"event_count":3`, `"event_count":3.0`, 0, false},
		{"case-folded member", `"seq":2,`, `"Seq":2,`, 2, false},
		{"duplicate member", `"seq":2,`, `"seq":2,"seq":2,`, 2, false},
		{"extra member", `"seq":2,`, `"seq":2,"note":"x",`, 2, false},
		{"seq as a string", `"seq":2,`, `"seq":"2",`, 2, false},
		{"seq as 2.5", `"seq":2,`, `"seq":2.5,`, 2, false},
		{"event_count as a string", `"event_count":3`, `"event_count":"3"`, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := replaceOnce(t, golden, tc.old, tc.new)
			_, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil)
			var ce *ChainError
			switch {
			case tc.frame && !errors.Is(err, ErrBadBundle):
				t.Fatalf("err = %v, want a bad bundle", err)
			case tc.frame:
			case tc.wantSeq == 0 && err != nil:
				t.Fatalf("err = %v, want a valid bundle", err)
			case tc.wantSeq != 0 && (!errors.As(err, &ce) || ce.Seq != tc.wantSeq):
				t.Fatalf("err = %v, want broken chain at seq %d", err, tc.wantSeq)
			}
		})
	}
}
