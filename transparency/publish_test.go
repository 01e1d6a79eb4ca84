package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
)

// cosign returns the signed checkpoint of l's current tree with a
// cosignature/v1 line of a witness key appended, and that witness's verifier
// key.
func cosign(t *testing.T, l *eventlog.Log, witnessKey ed25519.PrivateKey) ([]byte, string) {
	t.Helper()
	return cosignAt(t, l, l.TreeSize(), witnessKey)
}

// keepWitnessed writes a submitter's state file holding w as the witnessed
// checkpoint of size.
func keepWitnessed(t *testing.T, path string, size int64, w []byte) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"witnessed": map[string]any{"tree_size": size, "checkpoint": string(w), "cosigners": []string{"w"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Replace(path, "", b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPublishWritesTheWitnessedCheckpoint: publish writes the node's
// witnessed checkpoint as checkpoint when it is of the published tree (even
// over a plain checkpoint of the same tree), the plain one when the witnessed
// one is of an older tree or of another tree of that size, and the file then
// satisfies an observer that requires the witness.
func TestPublishWritesTheWitnessedCheckpoint(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	_, wkey, _ := ed25519.GenerateKey(nil)
	l := testLog(t, key, "main", 4)
	dir := filepath.Join(t.TempDir(), "pub")
	cosigs := filepath.Join(t.TempDir(), "cosignatures.json")
	src := WitnessedLogSource(l, "test", cosigs)
	checkpoint := func() []byte {
		b, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// No state file yet: the plain checkpoint.
	p, err := Publish(ctx, src, dir, PublishOptions{})
	if err != nil || p.Witnessed || !p.CheckpointWritten {
		t.Fatalf("first publish: %+v %v", p, err)
	}
	_, plain, _ := l.TreeCheckpoint()
	if !bytes.Equal(checkpoint(), plain) {
		t.Fatalf("checkpoint %q, want the plain %q", checkpoint(), plain)
	}

	// Witnessed since: the same tree gets the witnessed checkpoint.
	w, wvkey := cosign(t, l, wkey)
	keepWitnessed(t, cosigs, p.Head.Size, w)
	p, err = Publish(ctx, src, dir, PublishOptions{})
	if err != nil || !p.Witnessed || !p.CheckpointWritten || p.Written != 0 {
		t.Fatalf("publish once witnessed: %+v %v", p, err)
	}
	if !bytes.Equal(checkpoint(), w) {
		t.Fatalf("checkpoint %q, want the witnessed %q", checkpoint(), w)
	}
	require := CheckOptions{Witnesses: []string{wvkey}, Quorum: 1}
	if err := checkWitnessed(checkpoint(), require, time.Now()); err != nil {
		t.Fatalf("the published checkpoint fails the observer: %v", err)
	}
	if p, err = Publish(ctx, src, dir, PublishOptions{}); err != nil || !p.Witnessed || p.CheckpointWritten {
		t.Fatalf("publish again: %+v %v", p, err)
	}

	// The tree grew past the witnessed one: the plain checkpoint of the new
	// tree, which an observer requiring the witness refuses.
	appendNotes(t, l, "main", 2)
	if p, err = Publish(ctx, src, dir, PublishOptions{}); err != nil || p.Witnessed || !p.CheckpointWritten || p.Head.Size != 7 {
		t.Fatalf("publish after growth: %+v %v", p, err)
	}
	if err := checkWitnessed(checkpoint(), require, time.Now()); err == nil {
		t.Fatal("a plain checkpoint passed the observer")
	}

	// A witnessed checkpoint of another tree of the same size (a fork
	// signed with the same key) is never published.
	fork := testLog(t, key, "fork", 6)
	fw, _ := cosign(t, fork, wkey)
	keepWitnessed(t, cosigs, 7, fw)
	if p, err = Publish(ctx, src, dir, PublishOptions{}); err != nil || p.Witnessed || p.CheckpointWritten {
		t.Fatalf("publish with a fork's witnessed checkpoint: %+v %v", p, err)
	}
	if bytes.Equal(checkpoint(), fw) {
		t.Fatal("the fork's witnessed checkpoint was published")
	}

	// A plain LogSource has no witnessed checkpoint.
	if w, err := LogSource(l, "test").Witnessed(ctx); w != nil || err != nil {
		t.Fatalf("LogSource.Witnessed: %q %v", w, err)
	}
}
