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

// TestMirrorRefuses: a mirror that meets a source that lies (here a seal and
// checkpoint of another key) exits 1 naming the problem and the evidence it
// kept in its data dir, and stores nothing. Which sources are refused (a
// changed event, a swapped bundle, a rollback, a fork) and that each stores
// nothing are transparency's own tests.
func TestMirrorRefuses(t *testing.T) {
	origin := trStoppedNode(t, 600)
	pub, _ := mrPublish(t, origin)
	otherPub, _ := mrPublish(t, trStoppedNode(t, 600))
	data := filepath.Join(t.TempDir(), "mirror")
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	defer srv.Close()
	if _, errOut, code := mrMirror(t, srv.URL, data); code != 0 {
		t.Fatalf("mirror: %q", errOut)
	}

	b, err := os.ReadFile(filepath.Join(otherPub, transparency.SealFile))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(pub, transparency.SealFile), b)
	out, errOut, code := mrMirror(t, srv.URL, data)
	if code != 1 || !strings.Contains(errOut, "signed by another key") || !strings.Contains(errOut, filepath.Join(data, "mirror.evidence-")) {
		t.Fatalf("mirror of a source with another key's seal: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	requireMirrorEvidence(t, data, "another_key", "event_count")
	requireSameChain(t, origin, data, 600)
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files of src to dst, where none of them is yet.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
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
