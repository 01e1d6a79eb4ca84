package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// chainVector is the shape of testdata/vectors/chain-v1.json, a chain computed by an
// implementation independent of this one (copied from spec/vectors).
type chainVector struct {
	SeedHex         string `json:"seed_hex"`
	PublicKeyBase64 string `json:"public_key_base64"`
	NodeDID         string `json:"node_did"`
	Events          []struct {
		Event       map[string]json.RawMessage `json:"event"`
		SignedBytes string                     `json:"signed_bytes"`
	} `json:"events"`
	Bundle struct {
		GeneratedAt     string `json:"generated_at"`
		ChainRootHash   string `json:"chain_root_hash"`
		ChainTipHash    string `json:"chain_tip_hash"`
		SealedBytes     string `json:"sealed_bytes"`
		BundleSignature string `json:"bundle_signature"`
	} `json:"bundle"`
}

func loadVector(t *testing.T) chainVector {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors/chain-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var v chainVector
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestChainVector appends the vector's drafts with its seed and a stalled clock and
// requires every signed byte, id, signature and the bundle seal to match.
func TestChainVector(t *testing.T) {
	v := loadVector(t)
	start, _ := time.Parse(TimeLayout, "2026-01-02T03:04:05.000000Z")
	l := openMem(t, Options{Key: seedKey(t, v.SeedHex), Now: stalledClock(start)})
	if l.NodeDID() != v.NodeDID {
		t.Fatalf("node_did = %s, want %s", l.NodeDID(), v.NodeDID)
	}
	for _, ve := range v.Events[1:] {
		var typ string
		json.Unmarshal(ve.Event["type"], &typ)
		mustAppend(t, l, Draft{Type: typ, Payload: ve.Event["payload"]})
	}
	for i, ve := range v.Events {
		ev, err := l.Event(uint64(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		u, _ := signedFromStored(ev.Raw())
		if string(u) != ve.SignedBytes {
			t.Errorf("seq %d signed bytes:\n got %s\nwant %s", i+1, u, ve.SignedBytes)
		}
		var id, sig string
		json.Unmarshal(ve.Event["id"], &id)
		json.Unmarshal(ve.Event["signature"], &sig)
		if ev.ID != id || ev.Signature != sig {
			t.Errorf("seq %d: id/signature = %s %s, want %s %s", i+1, ev.ID, ev.Signature, id, sig)
		}
	}
	gen, _ := time.Parse(TimeLayout, v.Bundle.GeneratedAt)
	var buf bytes.Buffer
	s, err := l.WriteBundle(context.Background(), &buf, BundleHeader{ExportID: "vector", GeneratedAt: gen}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sealedBytes(s.RootHash, s.TipHash, s.GeneratedAt)); got != v.Bundle.SealedBytes {
		t.Errorf("sealed bytes:\n got %s\nwant %s", got, v.Bundle.SealedBytes)
	}
	var bundle struct {
		Signature string `json:"bundle_signature"`
	}
	if err := json.Unmarshal(buf.Bytes(), &bundle); err != nil {
		t.Fatal(err)
	}
	if bundle.Signature != v.Bundle.BundleSignature {
		t.Errorf("bundle_signature = %s, want %s", bundle.Signature, v.Bundle.BundleSignature)
	}
	if _, err := VerifyBundle(context.Background(), &buf, nil); err != nil {
		t.Errorf("VerifyBundle: %v", err)
	}
}
