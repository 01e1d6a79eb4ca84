package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mirrored is a mirror's stopped store, built by Mirror from a published
// directory, for copies to start from.
func mirrored(t *testing.T, pub string, key ed25519.PublicKey) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "db")
	m := openMirrorLog(t, db, key)
	c := serveDir(t, pub)
	if rep, err := Mirror(context.Background(), c, m, MirrorOptions{URL: c.Base(), Evidence: filepath.Join(t.TempDir(), "mirror")}); err != nil || rep.Result != "extended" {
		t.Fatalf("mirror of %s: %+v %v", pub, rep, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// requireMirrorEvidence: the mirror kept one evidence file of problem, mode
// 0600, holding what the source served.
func requireMirrorEvidence(t *testing.T, prefix, problem, served string) {
	t.Helper()
	files, _ := filepath.Glob(prefix + ".evidence-*-" + problem + ".json")
	if len(files) != 1 {
		all, _ := filepath.Glob(prefix + ".evidence-*")
		t.Fatalf("evidence files of %s: %v (all: %v)", problem, files, all)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), served) {
		t.Fatalf("the evidence %s does not hold %q:\n%s", files[0], served, b)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Fatalf("evidence mode %v, want 0600", fi.Mode().Perm())
	}
}

// judge runs Mirror on a copy of the mirror's store db against the
// directory pub, and requires the problem, its sentinel and words, the
// evidence holding served, and that the copy still holds exactly the
// origin's first n events.
func judge(t *testing.T, db, pub string, origin *store, n int, problem string, is error, says, served string) {
	t.Helper()
	copyDB := filepath.Join(t.TempDir(), "db")
	copyTree(t, db, copyDB)
	m := openMirrorLog(t, copyDB, origin.key.Public().(ed25519.PublicKey))
	c := serveDir(t, pub)
	evidence := filepath.Join(t.TempDir(), "mirror")
	rep, err := Mirror(context.Background(), c, m, MirrorOptions{URL: c.Base(), Evidence: evidence})
	if !errors.Is(err, is) || rep.Result != problem || rep.Events != 0 || !strings.Contains(err.Error(), says) ||
		rep.Evidence == "" || !strings.Contains(err.Error(), rep.Evidence) {
		t.Fatalf("mirror: %+v %v; want %s saying %q", rep, err, problem, says)
	}
	requireMirrorEvidence(t, evidence, problem, served)
	requireSameChain(t, origin.l, m, n)
}

// TestMirrorRefusesTampering: a mirror holding the origin's first 600
// events meets a source that lies: one byte of one event of a full bundle, a
// bundle swapped with another, a seal and checkpoint of another key. Each
// time Mirror names the seq or the checkpoint with its sentinel, keeps what
// was served as evidence, and stores nothing.
func TestMirrorRefusesTampering(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	origin := newStore(t, key, 600)
	pub600 := filepath.Join(t.TempDir(), "log600")
	origin.publish(t, pub600)
	origin.add(t, "more", 1000)
	pub := filepath.Join(t.TempDir(), "log")
	origin.publish(t, pub)
	otherPub := filepath.Join(t.TempDir(), "other")
	newStore(t, otherKey, 1600).publish(t, otherPub)
	db := mirrored(t, pub600, key.Public().(ed25519.PublicKey))

	bundle := func(dir string, n int64) string {
		return filepath.Join(dir, filepath.FromSlash(BundlePath(n, BundleSize)))
	}
	for _, c := range []struct {
		name    string
		tamper  func(t *testing.T, dir string) // changes a copy of the published directory
		problem string
		is      error
		says    string
		served  string
	}{
		{"one byte of one event", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(bundle(dir, 3))
			i := bytes.Index(b, []byte(`"n":200`)) // seq 1+599+200+1 = 801, in bundle 3
			b[i+5] = '9'
			writeFile(t, bundle(dir, 3), b)
		}, "bad_event", ErrBadEvent, "event 801 in events/003: broken chain at seq 801", `\"n\":290`},
		{"a bundle swapped", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(bundle(dir, 4))
			writeFile(t, bundle(dir, 3), b)
		}, "bad_event", ErrBadEvent, "event 769 in events/003 is not the event the origin's tree holds", `\"seq\":1025`},
		{"another key's seal", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(otherPub, SealFile))
			writeFile(t, filepath.Join(dir, SealFile), b)
		}, "another_key", ErrAnotherKey, "signed by another key", "event_count"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			copyTree(t, pub, dir)
			c.tamper(t, dir)
			judge(t, db, dir, origin, 600, c.problem, c.is, c.says, c.served)
		})
	}
}

// TestMirrorRefusesRollbackAndFork: a mirror holding the origin's 1600
// events meets the origin's directory as it was at 600 (restored from an old
// copy), and directories of another chain signed by the same key that shares
// the first 600 events: of the same size (another root for 1600 events) and
// larger (a tree that does not extend the one it holds). Each time Mirror
// names both sizes with its sentinel, keeps the evidence and its chain.
func TestMirrorRefusesRollbackAndFork(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	origin := newStore(t, key, 600)
	fork := origin.copy(t)
	old := filepath.Join(t.TempDir(), "old")
	origin.publish(t, old)
	origin.add(t, "more", 1000)
	fork.add(t, "fork", 1000)
	pub := filepath.Join(t.TempDir(), "log")
	origin.publish(t, pub)
	forkPub := filepath.Join(t.TempDir(), "fork")
	fork.publish(t, forkPub)
	fork.add(t, "fork", 100)
	forkPub2 := filepath.Join(t.TempDir(), "fork2")
	fork.publish(t, forkPub2)
	db := mirrored(t, pub, key.Public().(ed25519.PublicKey))

	judge(t, db, old, origin, 1600, "rolled_back", ErrRolledBack,
		"the log rolled back: the source's checkpoint has 600 events, the mirror holds the origin's checkpoint of 1600", `\"event_count\":600`)
	judge(t, db, forkPub, origin, 1600, "forked", ErrForked,
		"the log forked: the origin signed a tree of 1600 events with root", "stored_checkpoint")
	judge(t, db, forkPub2, origin, 1600, "forked", ErrForked,
		"the log forked: the origin's tree of 1700 events does not extend the tree of 1600 events the mirror holds", "stored_checkpoint")
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
