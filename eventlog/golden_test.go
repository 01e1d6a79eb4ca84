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
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// goldenLog builds a small chain from a fixed seed and a fixed clock.
func goldenLog(t *testing.T) *Log {
	start, _ := time.Parse(TimeLayout, "2026-11-21T09:00:00.000000Z")
	l := openMem(t, Options{Key: seedKey(t, "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"),
		Now: steppingClock(start, 1500*time.Millisecond)})
	mustAppend(t, l,
		draft("mission.created", "mission_id", "019b0000-0000-7000-8000-00000000000a", "title", "Survey <the> rim & back",
			"reward", map[string]int{"agent_credit": 10, "reputation": 1, "capacity": 0, "treasury_share_credit": 2}),
	)
	mustAppend(t, l, draft("mission.accepted", "mission_id", "019b0000-0000-7000-8000-00000000000a",
		"issuer_did", l.NodeDID(), "claimer", "scout-7", "reward", map[string]int{"agent_credit": 10}))
	return l
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n got %s\nwant %s", name, got, want)
	}
}

// TestGoldenChain pins the exact stored bytes of the first three events and of a
// sealed bundle.
func TestGoldenChain(t *testing.T) {
	l := goldenLog(t)
	var events bytes.Buffer
	for seq := uint64(1); seq <= 3; seq++ {
		ev, err := l.Event(seq)
		if err != nil {
			t.Fatal(err)
		}
		events.Write(ev.Raw())
		events.WriteByte('\n')
	}
	checkGolden(t, "events.jsonl", events.Bytes())
	gen, _ := time.Parse(TimeLayout, "2026-11-21T10:00:00.000000Z")
	var bundle bytes.Buffer
	if _, err := l.WriteBundle(context.Background(), &bundle, BundleHeader{ExportID: "019b0000-0000-7000-8000-0000000000ee", GeneratedAt: gen}, nil); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "bundle.json", bundle.Bytes())
}

// TestGoldenIndependent recomputes every golden event from the golden file with
// nothing but encoding/json, the JCS library applied to the whole event, SHA-256
// and Ed25519 — not with the production encoder — and checks the bundle seal the
// same way.
func TestGoldenIndependent(t *testing.T) {
	key := seedKey(t, "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1")
	raw, err := os.ReadFile("testdata/golden/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	prev := GenesisPrevHash
	for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		id, sig := m["id"].(string), m["signature"].(string)
		delete(m, "id")
		delete(m, "signature")
		plain, _ := json.Marshal(m)
		u, err := jcs.Transform(plain)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(u)
		if hex.EncodeToString(sum[:]) != id {
			t.Errorf("event %d: id %s, recomputed %x", i+1, id, sum)
		}
		if base64.StdEncoding.EncodeToString(ed25519.Sign(key, u)) != sig {
			t.Errorf("event %d: signature differs from an independent signing", i+1)
		}
		if m["prev_hash"] != prev || m["seq"] != float64(i+1) {
			t.Errorf("event %d: prev_hash/seq = %v/%v", i+1, m["prev_hash"], m["seq"])
		}
		prev = id
		// The stored form must be U followed by id and signature.
		if !bytes.HasPrefix(line, u[:len(u)-1]) {
			t.Errorf("event %d: stored form does not start with its signed bytes", i+1)
		}
	}
	braw, err := os.ReadFile("testdata/golden/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := json.Unmarshal(braw, &b); err != nil {
		t.Fatal(err)
	}
	sealed, _ := jcs.Transform([]byte(`{"generated_at":"` + b["generated_at"].(string) + `","chain_tip_hash":"` +
		b["chain_tip_hash"].(string) + `","chain_root_hash":"` + b["chain_root_hash"].(string) + `"}`))
	sig, _ := base64.StdEncoding.DecodeString(b["bundle_signature"].(string))
	if !ed25519.Verify(key.Public().(ed25519.PublicKey), sealed, sig) {
		t.Error("bundle_signature does not verify over independently sealed bytes")
	}
	if b["chain_tip_hash"] != prev || b["event_count"] != float64(3) {
		t.Errorf("bundle tip/count = %v/%v", b["chain_tip_hash"], b["event_count"])
	}
}

// TestGoldenBundleCopies verifies the golden bundle and every re-serialisation
// of it (reserialize_test.go), and requires a one-letter change of event 2's
// payload to fail at seq 2 in each.
func TestGoldenBundleCopies(t *testing.T) {
	golden, err := os.ReadFile("testdata/golden/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	eachCopy(t, golden, func(t *testing.T, b []byte) {
		rep, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil)
		if err != nil || rep.EventCount != 3 || rep.NodeDID != "did:key:z6Mkr63RvbFAA3jigzUeQrfzqu2qFPJnqh95zqHHUkU7RQjh" {
			t.Fatalf("golden copy: %+v, %v", rep, err)
		}
	})
	tampered := bytes.Replace(golden, []byte("Survey"), []byte("Surfey"), 1)
	eachCopy(t, tampered, func(t *testing.T, b []byte) {
		var ce *ChainError
		if _, err := VerifyBundle(context.Background(), bytes.NewReader(b), nil); !errors.As(err, &ce) || ce.Seq != 2 {
			t.Fatalf("err = %v, want broken chain at seq 2", err)
		}
	})
}
