package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// mrPublish publishes the stopped node in dir to a new directory and serves
// it with a plain static file server; it returns the directory and its URL.
func mrPublish(t *testing.T, dir string) (string, string) {
	t.Helper()
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	t.Cleanup(srv.Close)
	return pub, srv.URL
}

// mrChain reads every stored event of the log in db (a node's or a
// mirror's), opened with the public key pub.
func mrChain(t *testing.T, db string, pub []byte) [][]byte {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{Dir: db, PublicKey: pub, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out [][]byte
	err = l.ScanRaw(context.Background(), 1, l.Tip().Seq, func(_ uint64, raw []byte) error {
		out = append(out, bytes.Clone(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mrOriginKey is the stopped node's public key and verifier key.
func mrOriginKey(t *testing.T, dir string) ([]byte, string) {
	t.Helper()
	_, _, vkey := trTreeHead(t, dir)
	k, err := transparency.ParseKey(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return k.PublicKey(), vkey
}

// requireSameChain: the mirror holds exactly the origin's first n events,
// byte for byte.
func requireSameChain(t *testing.T, origin, mirror string, n int) {
	t.Helper()
	pub, _ := mrOriginKey(t, origin)
	want := mrChain(t, filepath.Join(origin, "db"), pub)[:n]
	got := mrChain(t, filepath.Join(mirror, "db"), pub)
	if len(got) != len(want) {
		t.Fatalf("the mirror holds %d events, want the origin's %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs:\nmirror %s\norigin %s", i+1, got[i], want[i])
		}
	}
}

// mrMirror runs civnode mirror --once and returns its output and exit code.
func mrMirror(t *testing.T, url, data string, extra ...string) (string, string, int) {
	t.Helper()
	return trRun(t, nil, append([]string{"mirror", "--from", url, "--data-dir", data, "--once"}, extra...)...)
}

// TestMirrorFollowsPublishedDirectory: a mirror built from a published
// directory alone holds the origin's chain byte for byte, pins the origin's
// key, follows the directory as it grows and says so when nothing changed;
// a data dir with a node key is refused.
func TestMirrorFollowsPublishedDirectory(t *testing.T) {
	origin := trStoppedNode(t, 600)
	_, vkey := mrOriginKey(t, origin)
	pub, url := mrPublish(t, origin)
	data := filepath.Join(t.TempDir(), "mirror")

	out, errOut, code := mrMirror(t, url, data)
	if code != 0 || !strings.Contains(out, "tree size 600") || !strings.Contains(out, "600 events stored") {
		t.Fatalf("mirror: exit %d, %q %q", code, out, errOut)
	}
	requireSameChain(t, origin, data, 600)
	if b, _ := os.ReadFile(filepath.Join(data, "origin.vkey")); string(b) != vkey+"\n" {
		t.Fatalf("origin.vkey holds %q, want %q", b, vkey)
	}
	if _, err := os.Stat(filepath.Join(data, "node.key")); !os.IsNotExist(err) {
		t.Fatalf("a mirror's data dir has a node.key: %v", err)
	}

	trAppend(t, origin, "more", 300)
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	out, errOut, code = mrMirror(t, url, data)
	if code != 0 || !strings.Contains(out, "tree size 900") || !strings.Contains(out, "300 events stored") {
		t.Fatalf("mirror: exit %d, %q %q", code, out, errOut)
	}
	requireSameChain(t, origin, data, 900)
	out, _, code = mrMirror(t, url, data)
	if code != 0 || !strings.HasPrefix(out, "unchanged: ") {
		t.Fatalf("mirror with nothing new: exit %d, %q", code, out)
	}

	if _, errOut, code := mrMirror(t, url, origin); code != 1 || !strings.Contains(errOut, "node.key") {
		t.Fatalf("mirror into a node's data dir: exit %d, %q", code, errOut)
	}
	other := trStoppedNode(t, 2)
	_, otherKey := mrOriginKey(t, other)
	if _, errOut, code := mrMirror(t, url, data, "--verifier-key", otherKey); code != 1 || !strings.Contains(errOut, "origin.vkey") {
		t.Fatalf("mirror with another --verifier-key: exit %d, %q", code, errOut)
	}
}

// requireMirrorEvidence: the mirror kept one evidence file of problem, holding
// what the source served.
func requireMirrorEvidence(t *testing.T, data, problem, served string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(data, "mirror.evidence-*-"+problem+".json"))
	if len(files) != 1 {
		all, _ := filepath.Glob(filepath.Join(data, "mirror.evidence-*"))
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

// TestMirrorTamper: a mirror at 600 events of the origin meets a source
// that lies: one byte of one event of a full bundle, a bundle swapped with
// another, a seal and checkpoint of another key, a directory rolled back,
// (TestMirrorRolledBack) and one forked (TestMirrorForked). Each time it exits 1
// naming the seq or the checkpoint, keeps what was served as evidence, and
// stores nothing: it still holds exactly the origin's first 600 events.
func TestMirrorTamper(t *testing.T) {
	origin := trStoppedNode(t, 600)
	pub600, _ := mrPublish(t, origin)
	trAppend(t, origin, "more", 1000)
	pub, _ := mrPublish(t, origin)
	other := trStoppedNode(t, 1600)
	otherPub, _ := mrPublish(t, other)

	// base is a mirror holding the origin's first 600 events.
	base := filepath.Join(t.TempDir(), "mirror")
	srv := httptest.NewServer(http.FileServer(http.Dir(pub600)))
	if _, errOut, code := mrMirror(t, srv.URL, base); code != 0 {
		t.Fatalf("mirror: %q", errOut)
	}
	srv.Close()

	bundle := func(n int64) string {
		return filepath.Join(pub, filepath.FromSlash(transparency.BundlePath(n, transparency.BundleSize)))
	}
	cases := []struct {
		name    string
		tamper  func(t *testing.T, dir string) // changes a copy of the published directory
		problem string
		says    string
		served  string
	}{
		{"one byte of one event", func(t *testing.T, dir string) {
			path := filepath.Join(dir, filepath.FromSlash(transparency.BundlePath(3, transparency.BundleSize)))
			b, _ := os.ReadFile(path)
			i := bytes.Index(b, []byte(`"n":200`)) // seq 1+599+200+1 = 801, in bundle 3
			b[i+5] = '9'
			mustWrite(t, path, b)
		}, "bad_event", "seq 801", `\"n\":290`},
		{"a bundle swapped", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(bundle(4))
			mustWrite(t, filepath.Join(dir, filepath.FromSlash(transparency.BundlePath(3, transparency.BundleSize))), b)
		}, "bad_event", "event 769 in events/003 is not the event the origin's tree holds", `\"seq\":1025`},
		{"another key's seal", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(otherPub, transparency.SealFile))
			mustWrite(t, filepath.Join(dir, transparency.SealFile), b)
		}, "another_key", "signed by another key", "event_count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			copyTree(t, pub, dir)
			c.tamper(t, dir)
			srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
			defer srv.Close()
			data := trCopyDir(t, base)
			out, errOut, code := mrMirror(t, srv.URL, data)
			if code != 1 || !strings.Contains(errOut, c.says) || !strings.Contains(errOut, "mirror.evidence-") {
				t.Fatalf("mirror of a tampered directory: exit %d, stdout %q, stderr %q; want 1 naming %q", code, out, errOut, c.says)
			}
			requireMirrorEvidence(t, data, c.problem, c.served)
			requireSameChain(t, origin, data, 600)
		})
	}
}

// TestMirrorRolledBack: a mirror that holds the origin's 1600 events meets
// the origin's directory as it was at 600 (restored from an old copy): it
// stops, names both sizes, keeps the evidence and its chain.
func TestMirrorRolledBack(t *testing.T) {
	origin := trStoppedNode(t, 600)
	pub600, _ := mrPublish(t, origin)
	old := filepath.Join(t.TempDir(), "old")
	copyTree(t, pub600, old)
	trAppend(t, origin, "more", 1000)
	trMust(t, "transparency", "publish", "--dir", pub600, "--data-dir", origin)
	srv := httptest.NewServer(http.FileServer(http.Dir(pub600)))
	defer srv.Close()
	data := filepath.Join(t.TempDir(), "mirror")
	if _, errOut, code := mrMirror(t, srv.URL, data); code != 0 {
		t.Fatalf("mirror: %q", errOut)
	}
	os.RemoveAll(pub600)
	copyTree(t, old, pub600)
	_, errOut, code := mrMirror(t, srv.URL, data)
	if code != 1 || !strings.Contains(errOut, "the log rolled back: the source's checkpoint has 600 events, the mirror holds the origin's checkpoint of 1600") {
		t.Fatalf("mirror of a rolled-back directory: exit %d, %q", code, errOut)
	}
	requireMirrorEvidence(t, data, "rolled_back", `\"event_count\":600`)
	requireSameChain(t, origin, data, 1600)
}

// TestMirrorForked: a mirror that holds the origin's 1600 events meets a
// directory of another chain signed by the same key, which shares the first
// 600 events: of the same size (another root for 1600 events), and larger (a
// tree that does not extend the one it holds). Each time it stops, keeps the
// evidence and its chain.
func TestMirrorForked(t *testing.T) {
	origin := trStoppedNode(t, 600)
	fork := trCopyDir(t, origin)
	trAppend(t, origin, "more", 1000)
	trAppend(t, fork, "fork", 1000)
	_, url := mrPublish(t, origin)
	forkPub, _ := mrPublish(t, fork)
	trAppend(t, fork, "fork", 100)
	forkPub2, _ := mrPublish(t, fork)
	data := filepath.Join(t.TempDir(), "mirror")
	if _, errOut, code := mrMirror(t, url, data); code != 0 {
		t.Fatalf("mirror: %q", errOut)
	}
	for _, c := range []struct {
		name, pub, says string
	}{
		{"same size", forkPub, "the log forked: the origin signed a tree of 1600 events with root"},
		{"larger", forkPub2, "the log forked: the origin's tree of 1700 events does not extend the tree of 1600 events the mirror holds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.FileServer(http.Dir(c.pub)))
			defer srv.Close()
			m := trCopyDir(t, data)
			_, errOut, code := mrMirror(t, srv.URL, m)
			if code != 1 || !strings.Contains(errOut, c.says) {
				t.Fatalf("mirror of a forked directory: exit %d, %q; want %q", code, errOut, c.says)
			}
			requireMirrorEvidence(t, m, "forked", "stored_checkpoint")
			requireSameChain(t, origin, m, 1600)
		})
	}
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files of src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMirrorKilledDuringCatchUp: a mirror killed with SIGKILL during its
// catch-up, three times at different points, resumes each time where its
// store ends, and ends holding the origin's chain byte for byte with the
// origin's seal.
func TestMirrorKilledDuringCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a chain of 40,000 events")
	}
	needBinary(t)
	origin := trStoppedNode(t, 40000)
	pubDir, _ := mrPublish(t, origin)
	// The source counts the bundles it serves, so that each kill follows
	// observed progress rather than a time a busy machine may not meet.
	bundles := make(chan struct{}, 1<<16)
	files := http.FileServer(http.Dir(pubDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/events/") {
			bundles <- struct{}{}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL
	data := filepath.Join(t.TempDir(), "mirror")
	pub, _ := mrOriginKey(t, origin)
	var tips []int
	// 40,000 events are 157 bundles, stored 16 at a time: a kill once a
	// round has asked for 40 bundles falls after its first stores and well
	// before the end, whatever the machine's speed.
	const killAfter = 40
	for round := range 3 {
		cmd := exec.Command(civnodeBin, "mirror", "--from", url, "--data-dir", data, "--once")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		asked := 0
	wait:
		for asked < killAfter {
			select {
			case <-bundles:
				asked++
			case err := <-exited:
				t.Fatalf("round %d: the mirror ended (%v) after asking for %d bundles, before the kill", round+1, err, asked)
			case <-time.After(2 * time.Minute):
				break wait
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
		for len(bundles) > 0 {
			<-bundles
		}
		n := 0
		if _, err := os.Stat(filepath.Join(data, "db")); err == nil {
			n = len(mrChain(t, filepath.Join(data, "db"), pub))
		}
		t.Logf("round %d: killed after %d bundles asked for, holding %d events", round+1, asked, n)
		tips = append(tips, n)
	}
	// Each kill must have cut a catch-up short after it stored something,
	// or the test proves nothing about resuming.
	if !slices.ContainsFunc(tips, func(n int) bool { return n > 0 && n < 40000 }) {
		t.Fatalf("the kills did not fall during the catch-up: the mirror held %v events after them", tips)
	}
	out, errOut, code := mrMirror(t, url, data)
	if code != 0 {
		t.Fatalf("mirror after the kills: exit %d, %q %q", code, out, errOut)
	}
	requireSameChain(t, origin, data, 40000)
	out, _, code = mrMirror(t, url, data)
	if code != 0 || !strings.HasPrefix(out, "unchanged: ") {
		t.Fatalf("the resumed mirror did not store the seal: exit %d, %q", code, out)
	}
}
