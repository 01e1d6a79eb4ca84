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

// TestTransparencyCheck runs check as a monitor would, against real nodes:
// the first run trusts and stores the node's key and checkpoint; a run after
// more events proves the new tree consistent with the stored one and stores
// it; then the same state file is pointed at nodes that share the key but not
// the history — a copy that diverged at the same size and at a larger one (a
// fork), an older copy (a rollback) — and at another node: each exits 1 naming
// the problem, keeps the stored checkpoint, and leaves the evidence beside it.
// The node the state came from still checks clean afterwards.
func TestTransparencyCheck(t *testing.T) {
	base := trStoppedNode(t, 50)
	older := trCopyDir(t, base)
	fork := trCopyDir(t, base)
	other := trStoppedNode(t, 5)
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
	trStop(t, a)
	stored := trState(t, state)

	// Same key, another history of the same size: two signed checkpoints of
	// one size with different roots, the evidence of a fork.
	trAppend(t, fork, "fork", 10)
	f := startProcess(t, fork)
	_, errOut, code = trCheck(t, f.url, f.token, state)
	if code != 1 || !strings.Contains(errOut, "the log forked: the node signed a tree of 60 events with root") ||
		!strings.Contains(errOut, "what the node served is in "+state+".evidence-") {
		t.Fatalf("check of a fork of the same size: exit %d, stderr %q", code, errOut)
	}
	sameSizeFork := evidenceWant{"forked", 60}
	requireEvidence(t, state, stored, sameSizeFork)
	trStop(t, f)

	// A larger tree that does not extend the stored one: the consistency
	// proof fails.
	trAppend(t, fork, "fork", 20)
	f = startProcess(t, fork)
	rep = trCheckJSON(t, f.url, f.token, state, 1)
	if rep.Result != "forked" || rep.OldSize != 60 || rep.TreeSize != 80 || !strings.Contains(rep.Error, "does not extend the tree of 60 events") {
		t.Fatalf("check of a longer fork: %+v", rep)
	}
	longerFork := evidenceWant{"forked", 80}
	requireEvidence(t, state, stored, sameSizeFork, longerFork)
	trStop(t, f)

	o := startProcess(t, older)
	_, errOut, code = trCheck(t, o.url, o.token, state)
	if code != 1 || !strings.Contains(errOut, "the log rolled back: the node's checkpoint has 50 events, the one stored in "+state+" has 60") {
		t.Fatalf("check of an older copy: exit %d, stderr %q", code, errOut)
	}
	// The rollback adds its evidence; the fork's two checkpoints stay.
	rollback := evidenceWant{"rolled_back", 50}
	requireEvidence(t, state, stored, sameSizeFork, longerFork, rollback)
	trStop(t, o)

	c := startProcess(t, other)
	_, errOut, code = trCheck(t, c.url, c.token, state)
	if code != 1 || !strings.Contains(errOut, "the checkpoint is signed by another key") {
		t.Fatalf("check of another node: exit %d, stderr %q", code, errOut)
	}
	requireEvidence(t, state, stored, sameSizeFork, longerFork, rollback, evidenceWant{"another_key", 5})
	// A first run that pins the key refuses another node, and stores nothing.
	pinned := filepath.Join(t.TempDir(), "pinned.json")
	_, errOut, code = trCheck(t, c.url, c.token, pinned, "--verifier-key", stored.VerifierKey)
	if _, err := os.Stat(pinned); code != 1 || !strings.Contains(errOut, "signed by another key") || !os.IsNotExist(err) {
		t.Fatalf("pinned first check of another node: exit %d, stderr %q, state %v", code, errOut, err)
	}
	trStop(t, c)

	a = startProcess(t, base)
	rep = trCheckJSON(t, a.url, obs, state, 0)
	if rep.Result != "unchanged" || rep.TreeSize != 60 {
		t.Fatalf("check of the original node after the refusals: %+v", rep)
	}
	rep = trCheckJSON(t, a.url, obs, pinned, 0, "--verifier-key", stored.VerifierKey)
	if rep.Result != "trusted" || rep.VerifierKey != stored.VerifierKey {
		t.Fatalf("pinned first check of the right node: %+v", rep)
	}
	_, errOut, code = trCheck(t, a.url, obs, state, "--verifier-key", sum.VerifierKey[:len(sum.VerifierKey)-4]+"AAA=")
	if code != 1 || !strings.Contains(errOut, "not --verifier-key") {
		t.Fatalf("check with a --verifier-key other than the stored one: exit %d, stderr %q", code, errOut)
	}
}

// evidenceWant is one piece of evidence check must have written: the problem
// and the size of the tree the node served.
type evidenceWant struct {
	problem    string
	servedSize int64
}

// requireEvidence requires that check kept the stored state and that every
// detection so far left its own evidence file beside it, each whole: the
// stored checkpoint and the one the node served, signed by the stored key (by
// another for another_key), and named in the file's problem. Nothing is
// overwritten, so an earlier fork's checkpoints survive a later rollback.
func requireEvidence(t *testing.T, state string, stored transparency.State, wants ...evidenceWant) {
	t.Helper()
	if st := trState(t, state); st.Checkpoint != stored.Checkpoint || st.VerifierKey != stored.VerifierKey {
		t.Fatalf("check changed the state after finding %v: %+v", wants, st)
	}
	files, err := filepath.Glob(state + ".evidence-*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(wants) {
		t.Fatalf("evidence files %q, want one for each of %v", files, wants)
	}
	seen := map[string]bool{}
	for _, w := range wants {
		found := ""
		for _, path := range files {
			if seen[path] || !strings.Contains(filepath.Base(path), "-"+w.problem) {
				continue
			}
			if mode := fileMode(t, path); mode != 0o600 {
				t.Errorf("%s: mode %v, want 0600", path, mode)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				Problem          string `json:"problem"`
				VerifierKey      string `json:"verifier_key"`
				StoredCheckpoint string `json:"stored_checkpoint"`
				ServedCheckpoint string `json:"served_checkpoint"`
			}
			jsonOf(t, string(b), &ev)
			if ev.Problem != w.problem || ev.StoredCheckpoint != stored.Checkpoint || ev.VerifierKey != stored.VerifierKey {
				t.Fatalf("evidence %s: %s", path, b)
			}
			old := trOpen(t, ev.VerifierKey, []byte(ev.StoredCheckpoint))
			if w.problem == "another_key" {
				if !strings.Contains(ev.ServedCheckpoint, fmt.Sprintf("\n%d\n", w.servedSize)) {
					continue
				}
			} else {
				served := trOpen(t, ev.VerifierKey, []byte(ev.ServedCheckpoint))
				if served.N != w.servedSize {
					continue
				}
				if served.N == old.N && served.Hash == old.Hash {
					t.Fatalf("evidence %s of %s: the served tree is the stored one", path, w.problem)
				}
			}
			found = path
			break
		}
		if found == "" {
			t.Fatalf("no evidence of %s serving %d events among %q", w.problem, w.servedSize, files)
		}
		seen[found] = true
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

// TestTransparencyCheckTiles runs check against static hosts that serve what
// publish wrote (an httptest file server, as any web server would): the first
// run trusts the verifier-key file, a later one proves the grown log
// consistent from the tiles alone; a mirror of a fork and of an older copy
// are refused as forked and rolled back; and a mirror whose tiles do not
// match its own checkpoint is an error that leaves the state as it was.
func TestTransparencyCheckTiles(t *testing.T) {
	base := trStoppedNode(t, 300)
	older := trCopyDir(t, base)
	fork := trCopyDir(t, base)
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
	if rep := check(url, 0); rep.Result != "consistent" || rep.OldSize != 300 || rep.TreeSize != 600 {
		t.Fatalf("check of the grown static log: %+v", rep)
	}

	trAppend(t, fork, "fork", 400)
	_, forkURL := serve(fork)
	if rep := check(forkURL, 1); rep.Result != "forked" || rep.TreeSize != 700 {
		t.Fatalf("check of a fork's static log: %+v", rep)
	}
	_, olderURL := serve(older)
	if rep := check(olderURL, 1); rep.Result != "rolled_back" || rep.TreeSize != 300 {
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
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", base)
	if rep := check(url, 0); rep.Result != "consistent" || rep.OldSize != 600 || rep.TreeSize != 900 {
		t.Fatalf("check of the grown static log after the refusals: %+v", rep)
	}
}
