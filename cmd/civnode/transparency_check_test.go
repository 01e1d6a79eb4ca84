package main

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/transparency"
)

// trCheck runs civnode transparency check against url with token and state,
// plus extra arguments.
func trCheck(t *testing.T, url, token, state string, extra ...string) (string, string, int) {
	t.Helper()
	args := append([]string{"transparency", "check", "--addr", url, "--token", token, "--state", state}, extra...)
	return trRun(t, nil, args...)
}

// trCheckJSON runs check with --json and decodes its report.
func trCheckJSON(t *testing.T, url, token, state string, wantCode int, extra ...string) transparency.Report {
	t.Helper()
	out, errOut, code := trCheck(t, url, token, state, append([]string{"--json"}, extra...)...)
	if code != wantCode {
		t.Fatalf("check --json: exit %d, want %d\nstdout: %s\nstderr: %s", code, wantCode, out, errOut)
	}
	var rep transparency.Report
	jsonOf(t, out, &rep)
	return rep
}

// trState reads a check state file and requires mode 0600.
func trState(t *testing.T, path string) transparency.State {
	t.Helper()
	if mode := fileMode(t, path); mode != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, mode)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st transparency.State
	jsonOf(t, string(b), &st)
	return st
}

var consistentLine = regexp.MustCompile(`^consistent: civnode/did:key:\S+ tree size ([0-9]+) → ([0-9]+), root \S+ \(([0-9]+) bytes transferred\)\n$`)

// TestTransparencyCheck runs check as a monitor would, against real nodes,
// for what the command adds to transparency.Check: the first run prints the
// key it trusted and stores the state file (mode 0600); a run after more
// events prints the consistent line with -v; --json prints the report with
// the bytes transferred; --verifier-key pins the key of a first run and is
// refused when the state holds another; and a problem (here a copy of the
// node that diverged at the same size) exits 1 naming it and the evidence
// file. The rules themselves (forks, rollbacks, another key, the evidence
// each leaves) are transparency's own tests.
func TestTransparencyCheck(t *testing.T) {
	base := trStoppedNode(t, 50)
	fork := trCopyDir(t, base)
	state := filepath.Join(t.TempDir(), "node.json")

	a := startProcess(t, base)
	obs := trObserverToken(t, base)
	var sum transparency.Summary
	getJSON(t, a.url+"/v1/transparency", a.token, 200, &sum)
	out, errOut, code := trCheck(t, a.url, obs, state)
	if code != 0 || out != fmt.Sprintf("trusted %s on first use: tree size 50, root %s; key %s stored\n", sum.Origin, sum.RootHash, sum.VerifierKey) {
		t.Fatalf("first check: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
	}
	if st := trState(t, state); st.VerifierKey != sum.VerifierKey || st.Checkpoint != sum.Checkpoint {
		t.Fatalf("state after the first check %+v, want the node's key and checkpoint %+v", st, sum)
	}

	client := httpClient
	for i := range 5 {
		if _, err := bootstrapOnce(client, a, fmt.Sprintf("check-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	getJSON(t, a.url+"/v1/transparency", a.token, 200, &sum)
	out, errOut, code = trCheck(t, a.url, obs, state, "-v")
	m := consistentLine.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != "50" || m[2] != "60" {
		t.Fatalf("check after 10 events: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
	}
	if st := trState(t, state); st.Checkpoint != sum.Checkpoint {
		t.Fatalf("stored checkpoint %q, the node's is %q", st.Checkpoint, sum.Checkpoint)
	}
	rep := trCheckJSON(t, a.url, obs, state, 0)
	if rep.Result != "unchanged" || rep.TreeSize != 60 || rep.OldSize != 60 || rep.RootHash != sum.RootHash || rep.BytesTransferred <= 0 {
		t.Fatalf("check with nothing new: %+v", rep)
	}
	stored := trState(t, state)
	pinned := filepath.Join(t.TempDir(), "pinned.json")
	rep = trCheckJSON(t, a.url, obs, pinned, 0, "--verifier-key", stored.VerifierKey)
	if rep.Result != "trusted" || rep.VerifierKey != stored.VerifierKey {
		t.Fatalf("pinned first check of the right node: %+v", rep)
	}
	_, errOut, code = trCheck(t, a.url, obs, state, "--verifier-key", sum.VerifierKey[:len(sum.VerifierKey)-4]+"AAA=")
	if code != 1 || !strings.Contains(errOut, "not --verifier-key") {
		t.Fatalf("check with a --verifier-key other than the stored one: exit %d, stderr %q", code, errOut)
	}
	trStop(t, a)

	// Same key, another history of the same size.
	trAppend(t, fork, "fork", 10)
	f := startProcess(t, fork)
	_, errOut, code = trCheck(t, f.url, f.token, state)
	if code != 1 || !strings.Contains(errOut, "the log forked: the node signed a tree of 60 events with root") ||
		!strings.Contains(errOut, "what the node served is in "+state+".evidence-") {
		t.Fatalf("check of a fork of the same size: exit %d, stderr %q", code, errOut)
	}
	if st := trState(t, state); st.VerifierKey != stored.VerifierKey || st.Checkpoint != stored.Checkpoint {
		t.Fatalf("check changed the state after finding a fork: %+v", st)
	}
	if files, _ := filepath.Glob(state + ".evidence-*-forked.json"); len(files) != 1 {
		t.Fatalf("evidence files of the fork: %q", files)
	}
	rep = trCheckJSON(t, f.url, f.token, state, 1)
	if rep.Result != "forked" || rep.OldSize != 60 || rep.TreeSize != 60 || !strings.Contains(rep.Error, "the log forked") || rep.Evidence == "" {
		t.Fatalf("check --json of a fork: %+v", rep)
	}
}

// TestTransparencyCheckTransfer: after the first run, a check costs the
// checkpoint and one consistency proof, a few kilobytes however large the
// log; here a tree of 70,000 events, three tile levels deep.
func TestTransparencyCheckTransfer(t *testing.T) {
	dir := trStoppedNode(t, 70_000)
	state := filepath.Join(t.TempDir(), "node.json")
	p := startProcess(t, dir)
	if rep := trCheckJSON(t, p.url, p.token, state, 0); rep.Result != "trusted" || rep.TreeSize != 70_000 {
		t.Fatalf("first check: %+v", rep)
	}
	if _, err := bootstrapOnce(httpClient, p, "transfer"); err != nil {
		t.Fatal(err)
	}
	rep := trCheckJSON(t, p.url, p.token, state, 0)
	if rep.Result != "consistent" || rep.TreeSize != 70_002 {
		t.Fatalf("second check: %+v", rep)
	}
	if rep.BytesTransferred > 10<<10 {
		t.Fatalf("the second check transferred %d bytes, want under 10 KiB", rep.BytesTransferred)
	}
	t.Logf("a check of a tree of %d events after one of %d transferred %d bytes", rep.TreeSize, rep.OldSize, rep.BytesTransferred)
}

// TestTransparencyCheckTiles runs check --tiles against static hosts that
// serve what publish wrote (an httptest file server, as any web server
// would): the first run trusts the verifier-key file and exits 0, a later
// one proves the grown log consistent; a mirror of an older copy exits 1 with
// the problem in its report, and one whose tiles do not match its own
// checkpoint exits 1 with the report's result error. Which static logs are
// refused, and why, is transparency's own test.
func TestTransparencyCheckTiles(t *testing.T) {
	base := trStoppedNode(t, 300)
	older := trCopyDir(t, base)
	state := filepath.Join(t.TempDir(), "static.json")
	serve := func(dataDir string) (pub, url string) {
		pub = filepath.Join(t.TempDir(), "log")
		trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dataDir)
		srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
		t.Cleanup(srv.Close)
		return pub, srv.URL
	}
	check := func(url string, code int) transparency.Report {
		t.Helper()
		out, errOut, got := trRun(t, nil, "transparency", "check", "--tiles", url, "--state", state, "--json")
		if got != code {
			t.Fatalf("check --tiles %s: exit %d, want %d\nstdout: %s\nstderr: %s", url, got, code, out, errOut)
		}
		var rep transparency.Report
		jsonOf(t, out, &rep)
		return rep
	}

	pub, url := serve(base)
	_, _, vkey := trTreeHead(t, base)
	if rep := check(url, 0); rep.Result != "trusted" || rep.TreeSize != 300 || rep.VerifierKey != vkey {
		t.Fatalf("first check of the static host: %+v", rep)
	}
	trAppend(t, base, "more", 300)
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", base)
	if rep := check(url, 0); rep.Result != "consistent" || rep.OldSize != 300 || rep.TreeSize != 600 || rep.BytesTransferred <= 0 {
		t.Fatalf("check of the grown static log: %+v", rep)
	}
	_, olderURL := serve(older)
	if rep := check(olderURL, 1); rep.Result != "rolled_back" || rep.TreeSize != 300 || rep.Evidence == "" {
		t.Fatalf("check of an older static log: %+v", rep)
	}

	trAppend(t, base, "more", 300)
	broken, brokenURL := serve(base)
	err := filepath.WalkDir(filepath.Join(broken, "tile"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b[0] ^= 1
		return os.WriteFile(path, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep := check(brokenURL, 1); rep.Result != "error" || !strings.Contains(rep.Error, "its tiles do not match its checkpoint") {
		t.Fatalf("check of a static log with damaged tiles: %+v", rep)
	}
}
