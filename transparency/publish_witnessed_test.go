package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/witness"
)

// cosignAt is cosign of l's tree of size events.
func cosignAt(t *testing.T, l *eventlog.Log, size int64, witnessKey ed25519.PrivateKey) ([]byte, string) {
	t.Helper()
	_, signed, err := l.TreeCheckpointAt(size)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := witness.NewCosignatureSigner("witness.example/w", witnessKey)
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(n, signer)
	if err != nil {
		t.Fatal(err)
	}
	return cosigned, signer.VerifierKey()
}

// TestPublishWitnessedOnly: with WitnessedOnly, Publish writes the tiles and
// bundles of the node's tree but the checkpoint and the seal only of its
// newest witnessed tree, which may be below it: with that tree's own partial
// tiles and bundle, so a mirror that requires the witness takes the
// directory at that tree. Nothing witnessed: no checkpoint at all. A tree
// witnessed that no run tiled still gets its partial tiles. Done skips what
// a run wrote.
func TestPublishWitnessedOnly(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	_, wkey, _ := ed25519.GenerateKey(nil)
	origin := testLog(t, key, "main", 299) // 300 events
	pub := filepath.Join(t.TempDir(), "pub")
	cosigs := filepath.Join(t.TempDir(), "cosignatures.json")
	src := WitnessedLogSource(origin, "origin", cosigs)
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(pub, filepath.FromSlash(rel)))
		return err == nil
	}

	p, err := Publish(ctx, src, pub, PublishOptions{WitnessedOnly: true})
	if err != nil || !p.Waiting || p.CheckpointWritten || p.Witnessed || p.Tiles.Size != 300 || p.Head.Size != 0 {
		t.Fatalf("nothing witnessed: %+v %v", p, err)
	}
	if exists(CheckpointFile) || exists(SealFile) {
		t.Fatal("a checkpoint or seal was published while nothing is witnessed")
	}
	for _, rel := range []string{"tile/0/001.p/44", BundlePath(0, 256), BundlePath(1, 44)} {
		if !exists(rel) {
			t.Fatalf("%s is missing", rel)
		}
	}

	// Witnessed at 300, grown to 520 since.
	w300, wvkey := cosignAt(t, origin, 300, wkey)
	keepWitnessed(t, cosigs, 300, w300)
	appendNotes(t, origin, "main", 220)
	p, err = Publish(ctx, src, pub, PublishOptions{WitnessedOnly: true, Done: p.Tiles.Size})
	if err != nil || !p.Waiting || !p.CheckpointWritten || !p.Witnessed || p.Tiles.Size != 520 || p.Head.Size != 300 {
		t.Fatalf("witnessed at 300, tiles of 520: %+v %v", p, err)
	}
	if b, _ := os.ReadFile(filepath.Join(pub, CheckpointFile)); !bytes.Equal(b, w300) {
		t.Fatalf("checkpoint %q, want the witnessed one of 300", b)
	}
	requireSealOf(t, pub, 300)
	for _, rel := range []string{"tile/0/001.p/44", "tile/0/002.p/8", "tile/1/000.p/2", BundlePath(1, 44), BundlePath(1, 256), BundlePath(2, 8)} {
		if !exists(rel) {
			t.Fatalf("%s is missing", rel)
		}
	}
	m := openMirrorLog(t, filepath.Join(t.TempDir(), "db"), key.Public().(ed25519.PublicKey))
	c := serveDir(t, pub)
	opts := MirrorOptions{URL: c.Base(), Evidence: filepath.Join(t.TempDir(), "mirror"), Witnesses: []string{wvkey}, Quorum: 1}
	if rep, err := Mirror(ctx, c, m, opts); err != nil || m.TreeSize() != 300 {
		t.Fatalf("a mirror requiring the witness, at 300: %+v %v", rep, err)
	}

	// Nothing new: nothing written.
	if p, err = Publish(ctx, src, pub, PublishOptions{WitnessedOnly: true, Done: p.Tiles.Size}); err != nil || p.Written != 0 || p.CheckpointWritten || p.Head.Size != 300 {
		t.Fatalf("publish again: %+v %v", p, err)
	}

	// Witnessed at 400, a tree no run tiled: its partial tiles and bundle
	// are written with its checkpoint.
	w400, _ := cosignAt(t, origin, 400, wkey)
	keepWitnessed(t, cosigs, 400, w400)
	if p, err = Publish(ctx, src, pub, PublishOptions{WitnessedOnly: true, Done: p.Tiles.Size}); err != nil || !p.CheckpointWritten || p.Head.Size != 400 {
		t.Fatalf("witnessed at 400: %+v %v", p, err)
	}
	requireSealOf(t, pub, 400)
	for _, rel := range []string{"tile/0/001.p/144", BundlePath(1, 144)} {
		if !exists(rel) {
			t.Fatalf("%s is missing", rel)
		}
	}
	if rep, err := Mirror(ctx, c, m, opts); err != nil || m.TreeSize() != 400 {
		t.Fatalf("a mirror requiring the witness, at 400: %+v %v", rep, err)
	}

	// Witnessed at the tip: the tip's checkpoint and seal, waiting for nothing.
	w520, _ := cosignAt(t, origin, 520, wkey)
	keepWitnessed(t, cosigs, 520, w520)
	if p, err = Publish(ctx, src, pub, PublishOptions{WitnessedOnly: true, Done: p.Tiles.Size}); err != nil || p.Waiting || p.Head.Size != 520 {
		t.Fatalf("witnessed at the tip: %+v %v", p, err)
	}
	requireSealOf(t, pub, 520)

	// A chain shorter than the published tree is refused, nothing written.
	short := testLog(t, key, "main", 99)
	if _, err := Publish(ctx, LogSource(short, "short"), pub, PublishOptions{}); !errors.Is(err, ErrPublishRefused) {
		t.Fatalf("a shorter chain of the same key: %v, want ErrPublishRefused", err)
	}
	if b, _ := os.ReadFile(filepath.Join(pub, CheckpointFile)); !bytes.Equal(b, w520) {
		t.Fatal("a refused publish changed the checkpoint")
	}
}

// requireSealOf requires the seal published in pub to be of size events.
func requireSealOf(t *testing.T, pub string, size uint64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pub, SealFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.ParseSeal(b)
	if err != nil || s.EventCount != size {
		t.Fatalf("the published seal: %+v %v, want one of %d events", s, err, size)
	}
}
