package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/eventlogtest"
	"github.com/civnode/civnode/eventlog/events"
)

// waitStateCommitted waits until n's chain holds a state.committed through
// the seq of its newest event before it, and returns how many it holds.
func waitStateCommitted(t *testing.T, n *node) int {
	t.Helper()
	return waitStateCommittedAt(t, n.url, n.token)
}

// waitStateCommittedAt is waitStateCommitted for the node at url.
func waitStateCommittedAt(t *testing.T, url, token string) int {
	t.Helper()
	var body eventsBody
	waitFor(t, "a state.committed of the newest change", func() (bool, string) {
		var st stateBody
		getJSON(t, url+"/v1/state", token, 200, &st)
		getJSON(t, url+"/v1/events?type=state.committed&limit=1000", token, 200, &body)
		if len(body.Events) == 0 {
			return false, "none"
		}
		last := body.Events[len(body.Events)-1]
		return last.Seq == st.Chain.Seq, string(last.Payload)
	})
	return len(body.Events)
}

// TestReplayChecksStateCommitments: civnode replay derives every root a
// node committed to again from the chain, and names a commitment that signs
// a root the events do not give.
func TestReplayChecksStateCommitments(t *testing.T) {
	dir := t.TempDir()
	n := startNodeArgs(t, dir, "--state-interval", "100ms")
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	waitStateCommitted(t, n)
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Bob","public_id":"bob"}`)
	committed := waitStateCommitted(t, n)
	n.stop(t)

	r := runCLI(t, nil, "replay", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "state commitments recomputed") {
		t.Fatalf("replay: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "state commitments recomputed  "+strconv.Itoa(committed)) {
		t.Errorf("replay recomputed other than the %d commitments:\n%s", committed, r.stdout)
	}
	// A verify killed during its state check left its scratch store.
	left := filepath.Join(dir, ".state-check-1234")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "000002.sst"), []byte("left"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "verify", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, ", "+strconv.Itoa(committed)+" state commitments derived again and equal") {
		t.Fatalf("verify: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if scratch, _ := filepath.Glob(filepath.Join(dir, ".state-check-*")); len(scratch) != 0 {
		t.Errorf("verify left %v in the data dir", scratch)
	}

	// A mirror that serves checks the commitments it takes in, and one that
	// keeps the chain alone is checked by verify.
	observer := trObserverToken(t, dir)
	n = startNodeArgs(t, dir, "--state-interval", "1h")
	served := startNodeArgs(t, filepath.Join(t.TempDir(), "served"), "--mirror-of", n.url, "--mirror-token", observer,
		"--mirror-interval", "100ms")
	mirrorState := func() (string, string) {
		var v struct {
			TreeSize int64 `json:"tree_size"`
			Mirror   struct {
				State    string  `json:"state"`
				Evidence *string `json:"evidence"`
			} `json:"mirror"`
		}
		getJSON(t, served.url+"/v1/transparency", served.token, 200, &v)
		ev := ""
		if v.Mirror.Evidence != nil {
			ev = *v.Mirror.Evidence
		}
		return fmt.Sprintf("%s at %d", v.Mirror.State, v.TreeSize), ev
	}
	waitFor(t, "the served mirror at the node's tip", func() (bool, string) {
		select {
		case err := <-served.done:
			t.Fatalf("the served mirror stopped: %v\n%s", err, served.stderr)
		default:
		}
		st, _ := mirrorState()
		return st == fmt.Sprintf("following at %d", tipOf(t, n)), st
	})
	// The served mirror proves the origin's records against the origin's key.
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	getJSON(t, n.url+"/v1/civilization/public-identity?public_id=ada", n.token, 200, &ada)
	proof := filepath.Join(t.TempDir(), "ada.json")
	if r := runCLI(t, nil, "state", "prove", "identity/"+ada.AgentDID, "--addr", served.url, "--token", served.token, "--out", proof); r.code != 0 {
		t.Fatalf("state prove from the served mirror: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "state", "verify", proof, "--verifier-key", summaryOf(t, n.url, n.token).VerifierKey); r.code != 0 ||
		!strings.HasPrefix(r.stdout, "ok: identity/"+ada.AgentDID) {
		t.Fatalf("a mirror's proof against the origin's key: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	chainOnly := filepath.Join(t.TempDir(), "mirror")
	if out, errOut, code := mrMirror(t, n.url, chainOnly, "--token", observer); code != 0 {
		t.Fatalf("mirror --once of the node's commitments: %d %s %s", code, out, errOut)
	}
	n.stop(t)

	// The node's key signs a root of another state.
	c, err := localnode.OpenExisting(context.Background(), datadir.Dir(dir), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tip := c.Log.Tip().Seq
	forged := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	if _, err := c.Log.Append(context.Background(), eventlog.Draft{Type: events.TypeStateCommitted,
		Payload: events.StateCommitted{ThroughSeq: tip, StateRoot: forged, Entries: 4}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	n = startNodeArgs(t, dir, "--state-interval", "1h", "--addr", strings.TrimPrefix(n.url, "http://"))
	waitFor(t, "the served mirror stopping on the forged commitment", func() (bool, string) {
		st, ev := mirrorState()
		return strings.HasPrefix(st, "stopped") && strings.Contains(ev, "signs root "+forged), st + ": " + ev
	})
	if out, errOut, code := mrMirror(t, n.url, chainOnly, "--token", observer); code != 0 {
		t.Fatalf("mirror --once: %d %s %s", code, out, errOut)
	}
	n.stop(t)
	if r := runCLI(t, nil, "verify", "--data-dir", chainOnly); r.code != 1 || !strings.Contains(r.stdout, "signs root "+forged) {
		t.Fatalf("verify of a chain-only mirror holding a forged commitment: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, cmd := range []string{"verify", "replay"} {
		r = runCLI(t, nil, cmd, "--data-dir", dir)
		if r.code != 1 || !strings.Contains(r.stdout, "invalid: state.committed at seq "+strconv.FormatUint(tip+1, 10)+" signs root "+forged) {
			t.Fatalf("%s of a forged commitment: %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
}

// TestTamperedModelIsCaught: a read model changed on disk (a mission's
// title) goes into the next root the node signs, since the node commits to
// what its models hold; civnode replay and civnode verify --data-dir, which
// derive the state from the chain alone, name that commitment.
func TestTamperedModelIsCaught(t *testing.T) {
	dir := t.TempDir()
	n := startNodeArgs(t, dir, "--state-interval", "100ms")
	s := newSurvey(t, n.url, n.token)
	id := s.publish("Survey the belt")
	s.claim(id)
	waitStateCommitted(t, n)
	n.stop(t)

	edited, err := eventlogtest.EditModels(datadir.Dir(dir).DBPath(), func(_, v []byte) []byte {
		if !bytes.Contains(v, []byte("Survey the belt")) {
			return nil
		}
		return bytes.ReplaceAll(v, []byte("Survey the belt"), []byte("Survey the moon"))
	})
	if err != nil || edited == 0 {
		t.Fatalf("edited %d model values: %v", edited, err)
	}
	n = startNodeArgs(t, dir, "--state-interval", "100ms")
	(&survey{t: t, url: n.url, token: n.token}).complete(id, "done")
	waitStateCommitted(t, n)
	n.stop(t)

	for _, args := range [][]string{{"verify", "--data-dir", dir}, {"replay", "--data-dir", dir}} {
		r := runCLI(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stdout, "invalid: state.committed at seq ") {
			t.Errorf("%s over a node that committed to a tampered model: %d\n%s%s", args[0], r.code, r.stdout, r.stderr)
		}
	}
}

// tipOf is the seq of n's newest event.
func tipOf(t *testing.T, n *node) uint64 {
	t.Helper()
	var st stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)
	return st.Chain.Seq
}

// TestStateKilledBeforeItsCommitment: a node committing to its state every
// 100 ms is killed with SIGKILL under writes, at random moments, four
// times, so that some kills fall between a change and its commitment,
// others inside a round. Restarted, it commits to every change it had
// acknowledged, and every root its chain signs is the one the chain's
// events give (civnode verify --data-dir and civnode replay).
func TestStateKilledBeforeItsCommitment(t *testing.T) {
	needBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	acked := 0
	for round := 1; round <= 4; round++ {
		p := startProcess(t, dir, "--state-interval", "100ms", "--registry-url", "")
		killAfter := time.Duration(200+rand.IntN(1200)) * time.Millisecond
		acked += len(bootstrapFor(t, p, round, killAfter))
		p.cmd.Process.Kill()
		if code := p.wait(t); code != -1 {
			t.Fatalf("round %d: killed process exit code %d, want -1\nstderr:\n%s", round, code, p.stderr)
		}
	}
	p := startProcess(t, dir, "--state-interval", "100ms", "--registry-url", "")
	waitStateCommittedAt(t, p.url, p.token)
	var ids struct {
		Total int `json:"identities"`
	}
	getJSON(t, p.url+"/v1/civilization/metrics", p.token, 200, &ids)
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\nstderr:\n%s", code, p.stderr)
	}
	if ids.Total < acked {
		t.Fatalf("%d identities after the kills, %d acknowledged", ids.Total, acked)
	}
	verified, code := runBinary(t, "verify", "--data-dir", dir)
	if code != 0 || !strings.Contains(verified, "state commitments derived again and equal") {
		t.Fatalf("verify after the kills: exit %d\n%s", code, verified)
	}
	if out, code := runBinary(t, "replay", "--data-dir", dir); code != 0 || !strings.Contains(out, "state commitments recomputed") {
		t.Fatalf("replay after the kills: exit %d\n%s", code, out)
	}
	t.Logf("%d writes acknowledged over 4 kills; %s", acked, strings.TrimSpace(verified))
}
