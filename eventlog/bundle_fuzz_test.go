package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzVerifyBundleReport holds VerifyBundle to what it reports, on arbitrary
// bytes seeded with real bundles and edits of them:
//   - every refusal is a *ChainError: ErrBadBundle with seq 0 for a fault in
//     the frame, ErrBrokenChain naming a seq from 1 for a fault in an event,
//     and progress never passed the faulty seq;
//   - progress reports seqs 1, 2, 3… in order, once each;
//   - an accepted bundle is, read by encoding/json alone, a chain as the
//     report says: event_count events numbered from 1, each prev_hash the id
//     before it, the root the first id and the tip the last, under the
//     node_did of every event; and verifying it again reports the same.
func FuzzVerifyBundleReport(f *testing.F) {
	golden, err := os.ReadFile("testdata/golden/bundle.json")
	if err != nil {
		f.Fatal(err)
	}
	l := openMem(f, Options{})
	mustAppend(f, l,
		draft("identity.bootstrapped", "display_name", "Ada \u2028 <&>", "n", 1e21),
		draft("mission.created", "title", strings.Repeat("é", 300), "reward", map[string]any{"agent_credit": 25}),
		draft("mission.accepted", "claimer", "ada", "list", []any{}, "obj", map[string]any{}),
		draft("payment.settled", "amount", -0.5, "nested", []any{[]any{nil, true, "\x00"}}),
	)
	var buf bytes.Buffer
	if _, err := l.WriteBundle(context.Background(), &buf, BundleHeader{}, nil); err != nil {
		f.Fatal(err)
	}
	fresh := buf.Bytes()
	for _, b := range [][]byte{golden, fresh} {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(bytes.Clone(b), ` {}`...))
		f.Add(bytes.Replace(b, []byte(`"seq":2`), []byte(`"seq":2.0`), 1))
		f.Add(bytes.Replace(b, []byte(`"seq":2`), []byte(`"seq":20e-1`), 1))
		f.Add(bytes.Replace(b, []byte(`"event_count":`), []byte(`"event_count":1`), 1))
		f.Add(bytes.Replace(b, []byte(`"signature":"`), []byte(`"signature":"A`), 1))
		f.Add(bytes.Replace(b, []byte(`"payload":{`), []byte(`"payload":{"x":1,`), 2))
		f.Add(bytes.Replace(b, []byte(`"prev_hash":"`), []byte(`"Prev_hash":"`), 2))
		f.Add(bytes.Replace(b, []byte(`{"node_did"`), []byte(`{"seq":1,"node_did"`), 2))
	}
	f.Add([]byte(`{"events":[]}`))
	f.Add([]byte(`{"events":[{"seq":1}],"event_count":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var seqs []uint64
		rep, err := VerifyBundle(context.Background(), bytes.NewReader(data), func(seq uint64) { seqs = append(seqs, seq) })
		for i, s := range seqs {
			if s != uint64(i+1) {
				t.Fatalf("progress %v is not 1, 2, 3…", seqs)
			}
		}
		if err != nil {
			var ce *ChainError
			switch {
			case !errors.As(err, &ce):
				t.Fatalf("refusal %v is not a *ChainError", err)
			case errors.Is(err, ErrBadBundle) && ce.Seq != 0:
				t.Fatalf("frame fault at seq %d: %v", ce.Seq, err)
			case errors.Is(err, ErrBrokenChain) && (ce.Seq == 0 || uint64(len(seqs)) >= ce.Seq):
				t.Fatalf("chain fault at seq %d after progress reached %d: %v", ce.Seq, len(seqs), err)
			case !errors.Is(err, ErrBadBundle) && !errors.Is(err, ErrBrokenChain):
				t.Fatalf("refusal %v is neither a bad bundle nor a broken chain", err)
			}
			return
		}
		var doc struct {
			NodeDID    string `json:"node_did"`
			EventCount uint64 `json:"event_count"`
			Root       string `json:"chain_root_hash"`
			Tip        string `json:"chain_tip_hash"`
			Events     []struct {
				ID       string  `json:"id"`
				Seq      float64 `json:"seq"`
				PrevHash string  `json:"prev_hash"`
				NodeDID  string  `json:"node_did"`
			} `json:"events"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("accepted, but encoding/json refuses it: %v", err)
		}
		n := len(doc.Events)
		switch {
		case n == 0 || rep.EventCount != uint64(n) || doc.EventCount != rep.EventCount || uint64(len(seqs)) != rep.EventCount:
			t.Fatalf("report %+v for %d events, event_count %d, progress %d", rep, n, doc.EventCount, len(seqs))
		case rep.RootHash != doc.Events[0].ID || rep.TipHash != doc.Events[n-1].ID || rep.RootHash != doc.Root || rep.TipHash != doc.Tip:
			t.Fatalf("report %+v, events from %s to %s", rep, doc.Events[0].ID, doc.Events[n-1].ID)
		case rep.NodeDID != doc.NodeDID:
			t.Fatalf("report names node %s, the bundle %s", rep.NodeDID, doc.NodeDID)
		case doc.Events[0].PrevHash != strings.Repeat("0", 64):
			t.Fatalf("genesis prev_hash %s", doc.Events[0].PrevHash)
		}
		for i, ev := range doc.Events {
			if ev.Seq != float64(i+1) || ev.NodeDID != rep.NodeDID || i > 0 && ev.PrevHash != doc.Events[i-1].ID {
				t.Fatalf("event %d: seq %v, node %s, prev_hash %s after %s", i, ev.Seq, ev.NodeDID, ev.PrevHash, doc.Events[max(i-1, 0)].ID)
			}
		}
		again, err := VerifyBundle(context.Background(), bytes.NewReader(data), nil)
		if err != nil || again != rep {
			t.Fatalf("verified again: %+v, %v; first %+v", again, err, rep)
		}
	})
}
