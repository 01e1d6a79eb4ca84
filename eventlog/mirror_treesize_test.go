package eventlog

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestSealTreeSizeBound: a seal whose event_count is beyond MaxTreeSize is
// refused with ErrTreeSize by ParseSeal, VerifySeal and StoreSeal, even when
// it is signed by the origin with a checkpoint of the same size or its
// event_count wraps to a negative int64: a mirror would otherwise prove
// against that size, and tlog loops on sizes above 2^62.
func TestSealTreeSizeBound(t *testing.T) {
	src, _ := importSource(t, 10)
	seal, err := src.Seal()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := newNoteSigner(src.did, src.pub, src.key)
	if err != nil {
		t.Fatal(err)
	}
	withCheckpoint := func(count uint64, size int64) Seal {
		s := seal
		s.EventCount = count
		cp, err := note.Sign(&note.Note{Text: CheckpointText(signer.name, TreeHead{Size: size, Root: sha256.Sum256([]byte("a root"))})}, signer)
		if err != nil {
			t.Fatal(err)
		}
		s.Checkpoint = string(cp)
		sealWith(src, &s)
		return s
	}
	m := openMirror(t, filepath.Join(t.TempDir(), "db"), src.PublicKey())
	defer m.Close()
	var evs []*Event
	if err := src.Scan(1, 10, func(ev *Event) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.Ingest(context.Background(), evs); err != nil {
		t.Fatal(err)
	}

	for name, s := range map[string]Seal{
		"2^62+5, its checkpoint too": withCheckpoint(1<<62+5, 1<<62+5),
		"MaxTreeSize+1":              withCheckpoint(uint64(MaxTreeSize)+1, 10),
		"2^64-1, int64 -1":           withCheckpoint(1<<64-1, 10),
	} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseSeal(b); !errors.Is(err, ErrTreeSize) {
			t.Errorf("%s: ParseSeal: %v, want ErrTreeSize", name, err)
		}
		if _, err := VerifySeal(s, src.did, src.pub); !errors.Is(err, ErrTreeSize) {
			t.Errorf("%s: VerifySeal: %v, want ErrTreeSize", name, err)
		}
		if err := m.StoreSeal(s); !errors.Is(err, ErrTreeSize) {
			t.Errorf("%s: StoreSeal: %v, want ErrTreeSize", name, err)
		}
	}
	// The node's own seal still verifies and is stored.
	b, err := json.Marshal(seal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSeal(b); err != nil {
		t.Fatal(err)
	}
	if err := m.StoreSeal(seal); err != nil {
		t.Fatal(err)
	}
}
