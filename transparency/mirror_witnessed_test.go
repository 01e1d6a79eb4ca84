package transparency

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/civnode/civnode/witness"
)

// TestMirrorWaitsForCosignatures: a mirror that requires a witness meets a
// published tree not cosigned yet: ErrNotWitnessed, Transient, no evidence,
// nothing stored. Once the origin's next publish carries the cosignature the
// mirror takes the tree and returns the cosigned checkpoint to serve
// (Mirrored.Witnessed), naming the required witness.
func TestMirrorWaitsForCosignatures(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	_, wkey, _ := ed25519.GenerateKey(nil)
	origin := testLog(t, key, "main", 5)
	pub := filepath.Join(t.TempDir(), "pub")
	cosigs := filepath.Join(t.TempDir(), "cosignatures.json")
	src := WitnessedLogSource(origin, "origin", cosigs)
	if _, err := Publish(ctx, src, pub, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	w, wvkey := cosign(t, origin, wkey)
	evidence := filepath.Join(t.TempDir(), "mirror")
	m := openMirrorLog(t, filepath.Join(t.TempDir(), "db"), key.Public().(ed25519.PublicKey))
	c := serveDir(t, pub)
	opts := MirrorOptions{URL: c.Base(), Evidence: evidence, Witnesses: []string{wvkey}, Quorum: 1}

	rep, err := Mirror(ctx, c, m, opts)
	if !errors.Is(err, ErrNotWitnessed) || !Transient(err) || Evidence(err) || rep.Result != "not_witnessed" || rep.Evidence != "" {
		t.Fatalf("a tree not cosigned yet: %+v %v", rep, err)
	}
	if rep.Head.Size != 6 || len(rep.Served) == 0 || m.TreeSize() != 0 {
		t.Fatalf("a tree not cosigned yet: head %d, served %q, the mirror holds %d", rep.Head.Size, rep.Served, m.TreeSize())
	}
	if files, _ := filepath.Glob(evidence + ".evidence-*"); len(files) != 0 {
		t.Fatalf("a tree not cosigned yet left evidence: %v", files)
	}

	keepWitnessed(t, cosigs, 6, w)
	if _, err := Publish(ctx, src, pub, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err = Mirror(ctx, c, m, opts)
	if err != nil || rep.Result != "extended" || m.TreeSize() != 6 {
		t.Fatalf("the cosigned tree: %+v %v", rep, err)
	}
	if rep.Witnessed == nil || rep.Witnessed.TreeSize != 6 || rep.Witnessed.Checkpoint != string(w) ||
		!slices.Equal(rep.Witnessed.Cosigners, []string{"witness.example/w"}) {
		t.Fatalf("the witnessed checkpoint to serve: %+v", rep.Witnessed)
	}
	if rep, err = Mirror(ctx, c, m, opts); err != nil || rep.Result != "unchanged" || rep.Witnessed == nil {
		t.Fatalf("unchanged: %+v %v", rep, err)
	}

	// Kept, it is served again by a mirror that requires that witness, and
	// not by one that requires another, or two.
	_, other, _ := ed25519.GenerateKey(nil)
	_, ovkey := cosign(t, origin, other)
	if got := HeldFor(rep.Witnessed, []string{wvkey}, 1, 0); got == nil || got.Checkpoint != string(w) {
		t.Fatalf("HeldFor the witness that cosigned: %+v", got)
	}
	if got := HeldFor(rep.Witnessed, []string{ovkey}, 1, 0); got != nil {
		t.Fatalf("HeldFor another witness: %+v", got)
	}
	if got := HeldFor(rep.Witnessed, []string{wvkey, ovkey}, 2, 0); got != nil {
		t.Fatalf("HeldFor a quorum of two: %+v", got)
	}
}

// TestMirrorCarriesCosignatures: a mirror that requires no witness carries
// the cosignature lines its source served, unchecked, once it holds their
// tree, and serves none while the source's checkpoint has none. A cosigned
// checkpoint of a tree the mirror holds with another root is a fork, with
// evidence, whether or not the mirror requires witnesses.
func TestMirrorCarriesCosignatures(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	_, wkey, _ := ed25519.GenerateKey(nil)
	origin := testLog(t, key, "main", 5)
	pub := filepath.Join(t.TempDir(), "pub")
	cosigs := filepath.Join(t.TempDir(), "cosignatures.json")
	src := WitnessedLogSource(origin, "origin", cosigs)
	if _, err := Publish(ctx, src, pub, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	evidence := filepath.Join(t.TempDir(), "mirror")
	m := openMirrorLog(t, filepath.Join(t.TempDir(), "db"), key.Public().(ed25519.PublicKey))
	c := serveDir(t, pub)
	opts := MirrorOptions{URL: c.Base(), Evidence: evidence}
	if rep, err := Mirror(ctx, c, m, opts); err != nil || rep.Result != "extended" || rep.Witnessed != nil {
		t.Fatalf("a plain checkpoint: %+v %v", rep, err)
	}

	w, _ := cosign(t, origin, wkey)
	keepWitnessed(t, cosigs, 6, w)
	if _, err := Publish(ctx, src, pub, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := Mirror(ctx, c, m, opts)
	if err != nil || rep.Result != "unchanged" || rep.Witnessed == nil || rep.Witnessed.Checkpoint != string(w) ||
		!slices.Equal(rep.Witnessed.Cosigners, []string{"witness.example/w"}) {
		t.Fatalf("a cosigned checkpoint of the tree held: %+v %v", rep, err)
	}

	// The origin's key on another tree of the size the mirror holds.
	fork := testLog(t, key, "fork", 5)
	fw, wvkey := cosign(t, fork, wkey)
	writeFile(t, filepath.Join(pub, CheckpointFile), fw)
	for i, o := range []MirrorOptions{opts, {URL: c.Base(), Evidence: evidence + "-w", Witnesses: []string{wvkey}}} {
		rep, err = Mirror(ctx, c, m, o)
		if !errors.Is(err, ErrForked) || !Evidence(err) || Transient(err) || rep.Result != "forked" || rep.Witnessed != nil {
			t.Fatalf("case %d: a cosigned fork of the tree held: %+v %v", i, rep, err)
		}
		requireMirrorEvidence(t, o.Evidence, "forked", strings.SplitN(string(fw), "\n", 4)[2]) // the fork's root
	}
}

// TestTransientAndEvidence: ErrNotWitnessed is waited out unless it comes
// with evidence; the problems Mirror keeps evidence of are Evidence and
// never Transient.
func TestTransientAndEvidence(t *testing.T) {
	for _, c := range []struct {
		err                 error
		transient, evidence bool
	}{
		{fmt.Errorf("%w: 0 of 1 cosignatures", ErrNotWitnessed), true, false},
		{fmt.Errorf("%w: %w", ErrNotWitnessed, ErrAnotherKey), false, true},
		{fmt.Errorf("x: %w", ErrForked), false, true},
		{fmt.Errorf("x: %w", ErrRolledBack), false, true},
		{fmt.Errorf("x: %w", ErrBadSeal), false, true},
		{fmt.Errorf("x: %w", ErrBadEvent), false, true},
		{fmt.Errorf("x: %w", errBadTiles), false, true},
		{&statusError{code: 503}, true, false},
		{&statusError{code: 404}, false, false},
		{ErrRedirect, false, false},
	} {
		if Transient(c.err) != c.transient || Evidence(c.err) != c.evidence {
			t.Errorf("%v: Transient %v, Evidence %v; want %v, %v", c.err, Transient(c.err), Evidence(c.err), c.transient, c.evidence)
		}
	}
}

// TestHeldWitnessed: a mirror's witnessed checkpoint survives a restart, and
// none is nil.
func TestHeldWitnessed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror-witnessed.json")
	if w, err := ReadHeldWitnessed(path); w != nil || err != nil {
		t.Fatalf("none: %+v %v", w, err)
	}
	want := &witness.Witnessed{TreeSize: 7, Checkpoint: "o\n7\nr\n\n— o s\n— w c\n", Cosigners: []string{"w"}}
	if err := WriteHeldWitnessed(path, want); err != nil {
		t.Fatal(err)
	}
	if fileMode(t, path) != 0o600 {
		t.Fatalf("mode %v, want 0600", fileMode(t, path))
	}
	got, err := ReadHeldWitnessed(path)
	if err != nil || got.TreeSize != want.TreeSize || got.Checkpoint != want.Checkpoint || !slices.Equal(got.Cosigners, want.Cosigners) {
		t.Fatalf("read back %+v %v, want %+v", got, err, want)
	}
}
