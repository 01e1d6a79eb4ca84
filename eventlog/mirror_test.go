package eventlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"path/filepath"
	"testing"
)

// openMirror opens a mirror's log of src's chain in dir.
func openMirror(t *testing.T, dir string, pub ed25519.PublicKey) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, PublicKey: pub, Models: &counter{version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestMirrorLog: a log opened with the origin's public key alone takes the
// origin's events through Ingest, refuses every write it would have to sign,
// serves the origin's stored checkpoint and exports the chain with the
// origin's seal, so that the export verifies as the origin's; it reopens with
// its seal, and refuses a seal that goes back or is not of its chain.
func TestMirrorLog(t *testing.T) {
	ctx := context.Background()
	src, _ := importSource(t, 700)
	dir := filepath.Join(t.TempDir(), "db")
	m := openMirror(t, dir, src.PublicKey())
	if m.Tip().Seq != 0 {
		t.Fatalf("a new mirror holds %d events, want none", m.Tip().Seq)
	}
	if _, _, err := m.TreeCheckpoint(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("checkpoint before any seal: %v, want ErrNotFound", err)
	}
	var evs []*Event
	if err := src.Scan(1, 500, func(ev *Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Ingest(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(ctx, draft("test.seq", "i", 1)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append on a mirror: %v, want ErrReadOnly", err)
	}
	if _, err := m.Decide(ctx, func() ([]Draft, error) { return nil, nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Decide on a mirror: %v, want ErrReadOnly", err)
	}
	if _, err := m.SignNodeProof("127.0.0.1:1", make([]byte, 32)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("SignNodeProof on a mirror: %v, want ErrReadOnly", err)
	}
	if m.VerifierKey() != src.VerifierKey() {
		t.Fatalf("mirror's verifier key %q, want the origin's %q", m.VerifierKey(), src.VerifierKey())
	}

	// The origin's seal of 700 events cannot be stored on a mirror of 500.
	seal700, err := src.Seal()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.StoreSeal(seal700); err == nil {
		t.Fatal("a seal beyond the mirror's tip was stored")
	}
	// A seal of 500 events, as a published directory holds one.
	_, cp500, err := src.TreeCheckpointAt(500)
	if err != nil {
		t.Fatal(err)
	}
	ev500, _ := src.Event(500)
	seal500 := Seal{EventCount: 500, RootHash: src.RootHash(), TipHash: ev500.ID, GeneratedAt: seal700.GeneratedAt, Checkpoint: string(cp500)}
	sealWith(src, &seal500)
	forged := seal500
	forged.GeneratedAt = "2020-01-01T00:00:00.000000Z"
	if err := m.StoreSeal(forged); err == nil {
		t.Fatal("a seal whose signature does not verify was stored")
	}
	if err := m.StoreSeal(seal500); err != nil {
		t.Fatal(err)
	}
	head, cp, err := m.TreeCheckpoint()
	if err != nil || head.Size != 500 || !bytes.Equal(cp, cp500) {
		t.Fatalf("mirror's checkpoint: size %d, %v; want the origin's of 500", head.Size, err)
	}

	var exp bytes.Buffer
	sum, err := m.WriteBundle(ctx, &exp, BundleHeader{ExportID: "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.EventCount != 500 || sum.Signature != seal500.Signature {
		t.Fatalf("mirror's export: %+v", sum)
	}
	rep, err := VerifyBundle(ctx, &exp, nil)
	if err != nil || !rep.Checkpoint || rep.EventCount != 500 {
		t.Fatalf("the mirror's export does not verify: %+v, %v", rep, err)
	}

	// Reopened, it still serves the stored checkpoint; a smaller seal is refused.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openMirror(t, dir, src.PublicKey())
	defer m.Close()
	if head, _, err := m.TreeCheckpoint(); err != nil || head.Size != 500 {
		t.Fatalf("reopened mirror's checkpoint: %d, %v", head.Size, err)
	}
	_, cp1, _ := src.TreeCheckpointAt(1)
	ev1, _ := src.Event(1)
	seal1 := Seal{EventCount: 1, RootHash: src.RootHash(), TipHash: ev1.ID, GeneratedAt: seal700.GeneratedAt, Checkpoint: string(cp1)}
	sealWith(src, &seal1)
	if err := m.StoreSeal(seal1); err == nil {
		t.Fatal("a seal of fewer events than the stored one was stored")
	}
	if s, err := m.Seal(); err != nil || s != seal500 {
		t.Fatalf("reopened mirror's seal: %+v, %v", s, err)
	}
}

// sealWith signs s with src's key, as src would for its tip.
func sealWith(src *Log, s *Seal) {
	s.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(src.key, sealedBytes(s.RootHash, s.TipHash, s.GeneratedAt)))
}
