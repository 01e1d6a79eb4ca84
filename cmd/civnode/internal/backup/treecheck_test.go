package backup

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
)

// noBars draws nothing.
func noBars(string, int64) (func(uint64), func()) { return nil, func() {} }

// noModels folds nothing, so that the read models rebuild as restore's do.
type noModels struct{}

func (noModels) Version() string                                { return "test" }
func (noModels) Fold(*eventlog.ModelTxn, *eventlog.Event) error { return nil }

// openNode opens a node's log in a new data dir's db/ with key, with n
// events on its chain (genesis included), tagged tag.
func openNode(t *testing.T, key ed25519.PrivateKey, n int, tag string) (*eventlog.Log, string) {
	t.Helper()
	data := t.TempDir()
	l, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(data, "db"), Key: key, Models: noModels{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	appendN(t, l, n-1, tag)
	return l, data
}

func appendN(t *testing.T, l *eventlog.Log, n int, tag string) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.seq", Payload: map[string]any{"i": i, "tag": tag}}); err != nil {
			t.Fatal(err)
		}
	}
}

// backupOf writes a backup of l, whose data dir is data, to a new directory.
func backupOf(t *testing.T, l *eventlog.Log, data string) (Manifest, string) {
	t.Helper()
	now := time.Now()
	snap, err := TakeSnapshot(l, data, now)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Remove()
	dest := filepath.Join(t.TempDir(), "backup")
	m, err := Write(snap, data, nil, dest, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, dest
}

// restoreAndVerify restores the backup in src with manifest m into a new
// dir and verifies it as civnode restore does, opening the log with key (or,
// for a mirror, pub).
func restoreAndVerify(t *testing.T, src string, m Manifest, key ed25519.PrivateKey, pub ed25519.PublicKey) error {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(src, dest, nil); err != nil {
		return err
	}
	l, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(dest, "db"), Key: key, PublicKey: pub, Models: noModels{}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = Verify(context.Background(), l, m, noBars)
	return err
}

// TestCheckManifest: a manifest's checkpoint must verify with the key of its
// node_did and be of its tree_size and tree_root; a tampered tree_root, a
// checkpoint of another tree or signed by another key, or a tree_size beyond
// the tip, is ErrManifest, and Restore copies nothing.
func TestCheckManifest(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	l, _ := openNode(t, key, 20, "a")
	head, cp, err := l.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	_, cp19, err := l.TreeCheckpointAt(19)
	if err != nil {
		t.Fatal(err)
	}
	good := Manifest{Format: Format, NodeDID: l.NodeDID(), TipSeq: 20, TipID: l.Tip().ID, TreeSize: 20,
		TreeRoot: base64.StdEncoding.EncodeToString(head.Root[:]), Checkpoint: string(cp)}
	if err := CheckManifest(good); err != nil {
		t.Fatal(err)
	}
	// The same checkpoint text, signed by a key of the same name that is not
	// the node's.
	skey, _, err := note.GenerateKey(rand.Reader, "civnode/"+l.NodeDID())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := note.Sign(&note.Note{Text: eventlog.CheckpointText(l.Origin(), head)}, signer)
	if err != nil {
		t.Fatal(err)
	}
	other := make([]byte, 32)
	other[0] = 1
	for name, tamper := range map[string]func(*Manifest){
		"tree_root":            func(m *Manifest) { m.TreeRoot = base64.StdEncoding.EncodeToString(other) },
		"malformed tree_root":  func(m *Manifest) { m.TreeRoot = "not base64" },
		"checkpoint of 19":     func(m *Manifest) { m.Checkpoint = string(cp19) },
		"another key":          func(m *Manifest) { m.Checkpoint = string(forged) },
		"no checkpoint":        func(m *Manifest) { m.Checkpoint = "" },
		"tree_size beyond tip": func(m *Manifest) { m.TipSeq = 19 },
		"tree_size 0":          func(m *Manifest) { m.TreeSize = 0 },
	} {
		m := good
		tamper(&m)
		if err := CheckManifest(m); !errors.Is(err, ErrManifest) {
			t.Errorf("%s: %v, want ErrManifest", name, err)
		}
	}

	// Restore refuses such a backup before it copies anything.
	m := good
	m.TreeRoot = base64.StdEncoding.EncodeToString(other)
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, ManifestName), manifestJSON(t, m))
	mustWrite(t, filepath.Join(src, "db", "x"), "x")
	dest := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(src, dest, nil); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "tree_root") {
		t.Fatalf("restore of a tampered manifest: %v", err)
	}
	if ents, _ := os.ReadDir(dest); len(ents) != 0 {
		t.Fatalf("the refused restore copied %v", ents)
	}
}

// TestVerifyHoldsTheTree: a manifest that agrees with itself but not with the
// restored tree is refused: a fork's checkpoint (the same key, another tree
// of the same size), and a node's backup whose tree is not the one at its
// tip.
func TestVerifyHoldsTheTree(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	a, aData := openNode(t, key, 30, "a")
	b, _ := openNode(t, key, 30, "b")
	man, src := backupOf(t, a, aData)
	if err := restoreAndVerify(t, src, man, key, nil); err != nil {
		t.Fatalf("the backup as written: %v", err)
	}

	headB, cpB, err := b.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	fork := man
	fork.TreeRoot, fork.Checkpoint = base64.StdEncoding.EncodeToString(headB.Root[:]), string(cpB)
	mustWrite(t, filepath.Join(src, ManifestName), manifestJSON(t, fork))
	if err := restoreAndVerify(t, src, fork, key, nil); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "the restored tree of 30 events has root") {
		t.Fatalf("a fork's checkpoint: %v", err)
	}

	head29, cp29, err := a.TreeCheckpointAt(29)
	if err != nil {
		t.Fatal(err)
	}
	older := man
	older.TreeSize, older.TreeRoot, older.Checkpoint = 29, base64.StdEncoding.EncodeToString(head29.Root[:]), string(cp29)
	mustWrite(t, filepath.Join(src, ManifestName), manifestJSON(t, older))
	if err := restoreAndVerify(t, src, older, key, nil); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "at its tip") {
		t.Fatalf("an older checkpoint of the node's: %v", err)
	}
}

// TestMirrorBackupBehindItsSeal: a mirror that stored events beyond the
// origin's seal it holds (a run cut short before its seal) backs up with
// that seal's checkpoint, of fewer events than its tip, and the backup
// restores and verifies with the origin's key; a mirror with no seal yet has
// no checkpoint to back up with.
func TestMirrorBackupBehindItsSeal(t *testing.T) {
	ctx := context.Background()
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	pub := key.Public().(ed25519.PublicKey)
	origin, _ := openNode(t, key, 10, "o")
	seal, err := origin.Seal()
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, origin, 5, "later")

	data := t.TempDir()
	m, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(data, "db"), PublicKey: pub, Models: noModels{}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ingest := func(from, to uint64) {
		t.Helper()
		var evs []*eventlog.Event
		if err := origin.Scan(from, to, func(ev *eventlog.Event) error { evs = append(evs, ev); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := m.Ingest(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	ingest(1, 10)
	if _, err := TakeSnapshot(m, data, time.Now()); !errors.Is(err, eventlog.ErrNotFound) {
		t.Fatalf("a backup of a mirror without a seal: %v, want ErrNotFound", err)
	}
	if err := m.StoreSeal(seal); err != nil {
		t.Fatal(err)
	}
	ingest(11, 15)

	man, src := backupOf(t, m, data)
	if man.TipSeq != 15 || man.TreeSize != 10 || man.Checkpoint != seal.Checkpoint || man.NodeDID != origin.NodeDID() {
		t.Fatalf("the mirror's manifest: tip %d, tree %d, node %s", man.TipSeq, man.TreeSize, man.NodeDID)
	}
	if err := restoreAndVerify(t, src, man, nil, pub); err != nil {
		t.Fatal(err)
	}
}

func manifestJSON(t *testing.T, m Manifest) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
