package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The witness tests drive serve --witness and --witness-for end to end: the
// witness state's place in a backup, and a split view that a witness and an
// observer requiring it refuse.

// treeSummary is the part of GET /v1/transparency the witness tests read.
type treeSummary struct {
	VerifierKey string `json:"verifier_key"`
	TreeSize    int64  `json:"tree_size"`
	Checkpoint  string `json:"checkpoint"`
	Witnessed   *struct {
		TreeSize   int64    `json:"tree_size"`
		Checkpoint string   `json:"checkpoint"`
		Cosigners  []string `json:"cosigners"`
	} `json:"witnessed"`
	Witnesses []struct {
		Name         string  `json:"name"`
		CosignedSize int64   `json:"cosigned_size"`
		LastError    *string `json:"last_error"`
	} `json:"witnesses"`
}

func summaryOf(t *testing.T, url, token string) treeSummary {
	t.Helper()
	var s treeSummary
	getJSON(t, url+"/v1/transparency", token, http.StatusOK, &s)
	return s
}

// getText fetches a text answer with the bearer token and requires 200.
func getText(t *testing.T, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s: %d %s %q (%v)", url, resp.StatusCode, resp.Header.Get("Content-Type"), b, err)
	}
	return b
}

// verifierKeyOfWitness is the cosignature verifier key a node publishes at GET
// /v1/witness.
func verifierKeyOfWitness(t *testing.T, n *node) string {
	t.Helper()
	var w struct {
		VerifierKey string `json:"verifier_key"`
	}
	getJSON(t, n.url+"/v1/witness", n.token, http.StatusOK, &w)
	return w.VerifierKey
}

// waitFor polls cond until it holds or waitTimeout passes; what names the
// wait and last says what was seen.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last %s", what, waitTimeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitWitnessed waits until n serves a witnessed checkpoint of its current
// tree, and returns the summary.
func waitWitnessed(t *testing.T, url, token string) treeSummary {
	t.Helper()
	var s treeSummary
	waitFor(t, "a witnessed checkpoint of the current tree", func() (bool, string) {
		s = summaryOf(t, url, token)
		return s.Witnessed != nil && s.Witnessed.TreeSize == s.TreeSize, fmt.Sprintf("%+v", s)
	})
	return s
}

// addCheckpointBody is a C2SP add-checkpoint request for the current tree of
// the node at url, with the consistency proof from old.
func addCheckpointBody(t *testing.T, url, token string, old int64) []byte {
	t.Helper()
	s := summaryOf(t, url, token)
	body := fmt.Sprintf("old %d\n", old)
	if old > 0 && old < s.TreeSize {
		var p struct {
			Proof []string `json:"proof"`
		}
		getJSON(t, fmt.Sprintf("%s/v1/transparency/proof/consistency?from=%d&to=%d", url, old, s.TreeSize), token, http.StatusOK, &p)
		for _, h := range p.Proof {
			body += h + "\n"
		}
	}
	return []byte(body + "\n" + s.Checkpoint)
}

// addCheckpoint posts body to a witness node and returns the status and
// answer.
func addCheckpoint(t *testing.T, witnessURL string, body []byte) (int, string, string) {
	t.Helper()
	resp, err := httpClient.Post(witnessURL+"/v1/witness/add-checkpoint", "text/plain", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// appendMission appends one event (a mission; the identity ada must exist).
func appendMission(t *testing.T, n *node, title string) {
	t.Helper()
	postOK(t, n.url, n.token, "/v1/core/missions", `{"title":"`+title+`","description":"d","publisher":"ada","publisher_kind":"agent","domain":"survey","subnet_id":"genesis","reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{}}`)
}

// TestBackupCarriesTheWitnessState: a node that cosigned a peer's checkpoint
// as a witness, backed up and restored, still holds the tree it cosigned: it
// answers a submission from 0 with 409 and that size, and does not cosign
// again from scratch (a conflicting tree could otherwise be cosigned).
func TestBackupCarriesTheWitnessState(t *testing.T) {
	root := t.TempDir()
	log := startNode(t, filepath.Join(root, "log"))
	postOK(t, log.url, log.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	logKey := summaryOf(t, log.url, log.token).VerifierKey

	wdir := filepath.Join(root, "witness")
	w := startNodeArgs(t, wdir, "--witness-for", logKey)
	status, _, answer := addCheckpoint(t, w.url, addCheckpointBody(t, log.url, log.token, 0))
	if status != http.StatusOK || !strings.HasPrefix(answer, "— civnode-witness/") {
		t.Fatalf("first cosignature: %d %q", status, answer)
	}
	cosigned := summaryOf(t, log.url, log.token).TreeSize

	backupDir := filepath.Join(root, "backup")
	if r := runCLI(t, nil, "backup", backupDir, "--data-dir", wdir); r.code != 0 {
		t.Fatalf("backup: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"witness.json", "node.key"} {
		if fi, err := os.Stat(filepath.Join(backupDir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup's %s: %v %v", f, fi, err)
		}
	}
	w.stop(t)
	restored := filepath.Join(root, "restored")
	if r := runCLI(t, nil, "restore", backupDir, "--data-dir", restored); r.code != 0 {
		t.Fatalf("restore: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w2 := startNodeArgs(t, restored, "--witness-for", logKey)
	status, ctype, answer := addCheckpoint(t, w2.url, addCheckpointBody(t, log.url, log.token, 0))
	if status != http.StatusConflict || ctype != "text/x.tlog.size" || answer != strconv.FormatInt(cosigned, 10)+"\n" {
		t.Fatalf("the restored witness answered a submission from 0 with %d %s %q, want 409 and size %d", status, ctype, answer, cosigned)
	}
}

// TestSplitViewRefused: two data dirs of one key that diverge after a common
// prefix. A witness that cosigned branch A refuses branch B (409 from 0, 422
// with a proof from A's size, since B does not extend A), a node serving B
// with that witness never gets a witnessed checkpoint, and an observer that
// requires the witness accepts A and rejects B. B started with the witness
// while it is behind A's witnessed tree appends nothing.
func TestSplitViewRefused(t *testing.T) {
	root := t.TempDir()
	dirA := filepath.Join(root, "a")
	a := startNode(t, dirA)
	postOK(t, a.url, a.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	appendMission(t, a, "common")
	logKey := summaryOf(t, a.url, a.token).VerifierKey
	a.stop(t)
	dirB := copyDataDir(t, dirA)

	w := startNodeArgs(t, filepath.Join(root, "witness"), "--witness-for", logKey)
	witnessArg := verifierKeyOfWitness(t, w) + "@" + w.url + "/v1/witness"

	a = startNodeArgs(t, dirA, "--witness", witnessArg)
	appendMission(t, a, "branch A")
	sa := waitWitnessed(t, a.url, a.token)

	// B, the common prefix, started with the witness that holds A's larger
	// tree, appends nothing: its fork guard heard the witness's size.
	b := startNodeArgs(t, dirB, "--witness", witnessArg)
	status, body, err := postStatus(httpClient, b.url+"/v1/core/missions", b.token, []byte(`{"title":"branch B","description":"d","publisher":"ada","publisher_kind":"agent","domain":"survey","subnet_id":"genesis","reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{}}`))
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"seen_tree_size":`+strconv.FormatInt(sa.TreeSize, 10)) {
		t.Fatalf("B behind the witness's tree appended: %d %s %v", status, body, err)
	}
	b.stop(t)
	// Started without it, B cannot know, and forks.
	b = startNode(t, dirB)
	appendMission(t, b, "branch B")
	appendMission(t, b, "branch B, again")
	b.stop(t)
	b = startNodeArgs(t, dirB, "--witness", witnessArg)
	sb := summaryOf(t, b.url, b.token)
	if sb.TreeSize <= sa.TreeSize {
		t.Fatalf("branch B has %d events, A %d: B must be the larger tree", sb.TreeSize, sa.TreeSize)
	}
	if sb.Checkpoint == sa.Checkpoint {
		t.Fatal("the branches did not diverge")
	}

	// The witness's own answers to B.
	status, ctype, answer := addCheckpoint(t, w.url, addCheckpointBody(t, b.url, b.token, 0))
	if status != http.StatusConflict || ctype != "text/x.tlog.size" || answer != strconv.FormatInt(sa.TreeSize, 10)+"\n" {
		t.Fatalf("B from 0: %d %s %q, want 409 and size %d", status, ctype, answer, sa.TreeSize)
	}
	if status, _, answer = addCheckpoint(t, w.url, addCheckpointBody(t, b.url, b.token, sa.TreeSize)); status != http.StatusUnprocessableEntity {
		t.Fatalf("B from A's size: %d %q, want 422", status, answer)
	}

	// B's own submitter meets the same refusal and has no witnessed
	// checkpoint; A's is still served.
	waitFor(t, "B's witness status names the refusal", func() (bool, string) {
		s := summaryOf(t, b.url, b.token)
		return len(s.Witnesses) == 1 && s.Witnesses[0].LastError != nil && strings.Contains(*s.Witnesses[0].LastError, "422"), fmt.Sprintf("%+v", s.Witnesses)
	})
	if s := summaryOf(t, b.url, b.token); s.Witnessed != nil {
		t.Fatalf("branch B was witnessed: %+v", s.Witnessed)
	}
	getJSON(t, b.url+"/v1/transparency/checkpoint?witnessed=1", b.token, http.StatusNotFound, nil)

	check := func(n *node, state string) cliResult {
		return runCLI(t, nil, "transparency", "check", "--addr", n.url, "--token", n.token,
			"--state", filepath.Join(root, state), "--witness", verifierKeyOfWitness(t, w), "--quorum", "1")
	}
	if r := check(a, "obs-a.json"); r.code != 0 {
		t.Fatalf("the observer refused branch A: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := check(b, "obs-b.json")
	if r.code != 1 || !strings.Contains(r.stderr, "not witnessed: 0 of 1 cosignatures") {
		t.Fatalf("the observer on branch B: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// An observer that saw A and is then shown B names the fork too.
	if r := check(b, "obs-a.json"); r.code != 1 {
		t.Fatalf("the observer of A accepted B: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestWitnessSurvivesKill runs the witness as the real binary: it cosigns
// size N of a log, is SIGKILLed right after its answer, and once restarted
// still holds N: it refuses a smaller tree, a tree of size N with another
// root and a larger tree that does not extend N, and cosigns a larger tree
// that does, given N as the old size.
func TestWitnessSurvivesKill(t *testing.T) {
	needBinary(t)
	root := t.TempDir()
	dirL := filepath.Join(root, "log")
	l := startNode(t, dirL)
	postOK(t, l.url, l.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	logKey := summaryOf(t, l.url, l.token).VerifierKey
	smaller := addCheckpointBody(t, l.url, l.token, 0)
	l.stop(t)
	dirF := copyDataDir(t, dirL) // the fork: one key, another branch from here

	l = startNode(t, dirL)
	appendMission(t, l, "L one")
	appendMission(t, l, "L two")
	n := summaryOf(t, l.url, l.token).TreeSize

	wdir := filepath.Join(root, "witness")
	w := startProcess(t, wdir, "--witness-for", logKey)
	if status, _, answer := addCheckpoint(t, w.url, addCheckpointBody(t, l.url, l.token, 0)); status != http.StatusOK {
		t.Fatalf("cosign size %d: %d %q", n, status, answer)
	}
	w.signal(t, syscall.SIGKILL)
	if code := w.wait(t); code != -1 {
		t.Fatalf("the witness exited with %d, want the SIGKILL", code)
	}
	w = startProcess(t, wdir, "--witness-for", logKey)
	held := strconv.FormatInt(n, 10) + "\n"

	f := startNode(t, dirF)
	appendMission(t, f, "F one")
	appendMission(t, f, "F two")
	if fs := summaryOf(t, f.url, f.token); fs.TreeSize != n {
		t.Fatalf("the fork has %d events, want %d", fs.TreeSize, n)
	}
	sameSizeFork := addCheckpointBody(t, f.url, f.token, n)
	appendMission(t, f, "F three")
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		answer string
	}{
		{"a submission from 0", addCheckpointBody(t, l.url, l.token, 0), http.StatusConflict, held},
		{"a smaller tree from its own size", smaller, http.StatusConflict, held},
		{"a smaller tree from the held size", []byte("old " + held + "\n" + strings.SplitN(string(smaller), "\n\n", 2)[1]), http.StatusBadRequest, ""},
		{"the fork at the held size", sameSizeFork, http.StatusConflict, held},
		{"the larger fork from the held size", addCheckpointBody(t, f.url, f.token, n), http.StatusUnprocessableEntity, ""},
	} {
		status, _, answer := addCheckpoint(t, w.url, tc.body)
		if status != tc.status || (tc.answer != "" && answer != tc.answer) {
			t.Errorf("%s after the restart: %d %q, want %d %q", tc.name, status, answer, tc.status, tc.answer)
		}
	}

	appendMission(t, l, "L three")
	if status, _, answer := addCheckpoint(t, w.url, addCheckpointBody(t, l.url, l.token, n)); status != http.StatusOK || !strings.HasPrefix(answer, "— civnode-witness/") {
		t.Fatalf("the consistent larger tree from %d: %d %q", n, status, answer)
	}
}

// startWitnessedPair runs two nodes under root: a (with one identity) and
// witness, which witnesses a; a submits its checkpoints to witness. It
// returns a once its checkpoint is witnessed, with the witness's verifier
// key and a's. a is served with the serve arguments extra too.
func startWitnessedPair(t *testing.T, root string, extra ...string) (a *node, wkey, vkey string) {
	t.Helper()
	w := startNode(t, root+"/witness") // its witness key, before it witnesses anything
	wkey = verifierKeyOfWitness(t, w)
	w.stop(t)
	a = startNode(t, root+"/a")
	postOK(t, a.url, a.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	vkey = summaryOf(t, a.url, a.token).VerifierKey
	a.stop(t)
	w = startNodeArgs(t, root+"/witness", "--witness-for", vkey)
	a = startNodeArgs(t, root+"/a", append([]string{"--witness", wkey + "@" + w.url + "/v1/witness"}, extra...)...)
	waitWitnessed(t, a.url, a.token)
	return a, wkey, vkey
}
