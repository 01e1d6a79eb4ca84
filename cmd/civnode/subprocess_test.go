package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSubprocessKillRestart runs the real binary, kills it with SIGKILL while it
// serves but is idle, and requires each time that it restarts on the same data dir
// with the same node, that the chain verifies with its tip intact, and that every
// start was audited. Then a SIGTERM stops it cleanly. TestSubprocessKillUnderLoad
// kills it while clients append over HTTP.
func TestSubprocessKillRestart(t *testing.T) {
	dir := t.TempDir()
	var did, root string
	const rounds = 3
	for round := 1; round <= rounds; round++ {
		p := startProcess(t, dir)
		var health map[string]any
		getJSON(t, p.url+"/v1/health", "", 200, &health)
		var st stateBody
		getJSON(t, p.url+"/v1/state", p.token, 200, &st)
		if round == 1 {
			did, root = st.Identity.NodeDID, st.Chain.RootHash
		}
		if st.Identity.NodeDID != did || st.Chain.RootHash != root || st.Chain.Seq != 1 || st.Chain.TipHash != root {
			t.Fatalf("round %d: state %+v, want node %s with root = tip %s at seq 1", round, st, did, root)
		}
		var evs eventsBody
		getJSON(t, p.url+"/v1/events", p.token, 200, &evs)
		if evs.Total != 1 || len(evs.Events) != 1 || evs.Events[0].ID != root {
			t.Fatalf("round %d: events %+v, want the genesis event", round, evs)
		}
		var audit auditBody
		getJSON(t, p.url+"/v1/audit?action=node.started", p.token, 200, &audit)
		if len(audit.Entries) != round {
			t.Fatalf("round %d: %d node.started entries, want %d", round, len(audit.Entries), round)
		}
		if round == 1 {
			// Another process cannot open the data dir while the node runs.
			out, code := runBinary(t, "verify", "--data-dir", dir)
			if code != 1 || !strings.Contains(out, "data dir in use by a running node") {
				t.Errorf("verify --data-dir of a running node: exit %d, output %q", code, out)
			}
		}

		p.signal(t, syscall.SIGKILL)
		if code := p.wait(t); code != -1 {
			t.Errorf("round %d: killed process exit code %d, want -1 (signalled)", round, code)
		}
		out, code := runBinary(t, "verify", "--data-dir", dir)
		want := "ok: 1 events, node " + did + ", root " + root + ", tip " + root + "\n"
		if code != 0 || !strings.HasSuffix(out, want) {
			t.Fatalf("round %d: verify --data-dir after SIGKILL: exit %d, output %q; want %q", round, code, out, want)
		}
	}

	p := startProcess(t, dir)
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit code %d, want 0\nstderr:\n%s", code, p.stderr)
	}
	if es := auditActions(t, dir, "node.stopped"); len(es) != 1 || es[0].Actor != did {
		t.Errorf("node.stopped entries %+v, want exactly one (the SIGTERM) by %s", es, did)
	}
	if es := auditActions(t, dir, "node.started"); len(es) != rounds+1 {
		t.Errorf("%d node.started entries, want %d", len(es), rounds+1)
	}
}

// TestSubprocessKillUnderLoad runs the real binary while 16 clients bootstrap
// identities over HTTP with the owner token, SIGKILLs it once a number of
// bootstraps (different each round) have been answered 200, and requires that
// every answered bootstrap survived: the chain on disk verifies, holds both events
// of each bootstrap and no half of one, and after a restart every acknowledged
// identity is served by GET /v1/civilization/public-identity with the DID it was
// given, and the node's HTTP export verifies. Three rounds share one data dir, so
// each restart also recovers the chains of the rounds before it. Requests in
// flight when the process dies may or may not have landed; only the acknowledged
// ones are owed.
func TestSubprocessKillUnderLoad(t *testing.T) {
	dir := t.TempDir()
	const rounds = 3
	var did, root string
	var acked []ackedIdentity // every bootstrap answered 200, over all rounds
	for round := 1; round <= rounds; round++ {
		p := startProcess(t, dir)
		var st stateBody
		getJSON(t, p.url+"/v1/state", p.token, 200, &st)
		if round == 1 {
			did, root = st.Identity.NodeDID, st.Chain.RootHash
		}
		if st.Identity.NodeDID != did || st.Chain.RootHash != root {
			t.Fatalf("round %d: node %s root %s, want node %s root %s", round, st.Identity.NodeDID, st.Chain.RootHash, did, root)
		}
		requireIdentities(t, p, acked)
		if round > 1 {
			requireTreeMatchesChain(t, fmt.Sprintf("round %d, after the SIGKILL of round %d", round, round-1), p)
		}

		killAfter := 10 + rand.IntN(150)
		start := time.Now()
		got := bootstrapUntilKilled(t, p, round, killAfter)
		if code := p.wait(t); code != -1 {
			t.Fatalf("round %d: killed process exit code %d, want -1 (signalled)\nstderr:\n%s", round, code, p.stderr)
		}
		acked = append(acked, got...)
		t.Logf("round %d: SIGKILL after %d acknowledged bootstraps, %d acknowledged in all (%v)", round, killAfter, len(got), time.Since(start).Round(time.Millisecond))

		// The chain as the crash left it, read by another process.
		out, code := runBinary(t, "verify", "--data-dir", dir)
		n := requireVerified(t, fmt.Sprintf("round %d: verify --data-dir after SIGKILL", round), out, code, did, root)
		if want := uint64(1 + 2*len(acked)); n < want {
			t.Fatalf("round %d: %d events on disk, want at least %d (genesis and two per acknowledged bootstrap)", round, n, want)
		}
		// The read models the crash left on disk equal a fresh fold of the chain.
		out, code = runBinary(t, "replay", "--data-dir", dir)
		if code != 0 || !replayFoundNoDifference.MatchString(out) {
			t.Fatalf("round %d: replay after SIGKILL: exit %d, want the kept models equal to the rebuilt ones:\n%s", round, code, out)
		}
	}

	// The last crash recovered: every acknowledgement holds and the export verifies.
	p := startProcess(t, dir)
	requireIdentities(t, p, acked)
	requireTreeMatchesChain(t, "after the last SIGKILL", p)
	export := getJSON(t, p.url+"/v1/events/export", p.token, 200, nil)
	requireBootstrapPairs(t, export, acked)
	out, code := runBinaryStdin(t, export, "verify", "-")
	n := requireVerified(t, "verify - of the HTTP export", out, code, did, root)
	var st stateBody
	getJSON(t, p.url+"/v1/state", p.token, 200, &st)
	if st.Chain.Seq != n {
		t.Errorf("state chain.seq %d, export holds %d events", st.Chain.Seq, n)
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit code %d, want 0\nstderr:\n%s", code, p.stderr)
	}
	out, code = runBinary(t, "verify", "--data-dir", dir)
	if m := requireVerified(t, "verify --data-dir after SIGTERM", out, code, did, root); m != n {
		t.Errorf("verify --data-dir after SIGTERM: %d events, the export had %d", m, n)
	}
}

// requireTreeMatchesChain holds the Merkle tree a restarted node serves to
// its chain: the signed checkpoint's root is the root civnode verify
// recomputes from the events of an export of the same size, which also
// carries a checkpoint that must verify (docs/transparency.md).
func requireTreeMatchesChain(t *testing.T, when string, p *process) {
	t.Helper()
	var head struct {
		TreeSize   int64  `json:"tree_size"`
		RootHash   string `json:"root_hash"`
		Checkpoint string `json:"checkpoint"`
	}
	getJSON(t, p.url+"/v1/transparency", p.token, 200, &head)
	export := getJSON(t, p.url+"/v1/events/export", p.token, 200, nil)
	out, code := runBinaryStdin(t, export, "verify", "-")
	m := verifiedTreeRoot.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("%s: verify - of the export: exit %d, no recomputed tree root in %q", when, code, out)
	}
	if n, _ := strconv.ParseInt(m[1], 10, 64); n != head.TreeSize || m[2] != head.RootHash {
		t.Fatalf("%s: the checkpoint says %d events with root %s, the events give %s with root %s",
			when, head.TreeSize, head.RootHash, m[1], m[2])
	}
	if !strings.Contains(head.Checkpoint, "\n"+strconv.FormatInt(head.TreeSize, 10)+"\n"+head.RootHash+"\n") {
		t.Fatalf("%s: the checkpoint note does not name size %d and root %s:\n%s", when, head.TreeSize, head.RootHash, head.Checkpoint)
	}
}

// verifiedTreeRoot reads the event count and the recomputed tree root from
// civnode verify's line for a bundle with a checkpoint.
var verifiedTreeRoot = regexp.MustCompile(`ok: (\d+) events, .*, checkpoint tree root (\S+)\n`)

// replayFoundNoDifference matches civnode replay's report of a rebuild that
// found the kept read models equal to the chain's.
var replayFoundNoDifference = regexp.MustCompile(`(?m)^differences from the kept models\s+0$`)

// ackedIdentity is a bootstrap the node answered 200.
type ackedIdentity struct {
	AgentDID string `json:"agent_did"`
	PublicID string `json:"public_id"`
}

// bootstrapUntilKilled runs 16 clients that bootstrap identities with unique
// public_ids on p until killAfter of them have been answered 200, SIGKILLs p
// then, and returns every bootstrap answered 200, including those whose answer
// was read after the kill. Before the kill every request must succeed.
func bootstrapUntilKilled(t *testing.T, p *process, round, killAfter int) []ackedIdentity {
	t.Helper()
	const clients = 16
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients},
	}
	defer client.CloseIdleConnections()

	var (
		mu       sync.Mutex
		acked    []ackedIdentity
		killed   atomic.Bool
		killOnce sync.Once
		killedCh = make(chan struct{})
		wg       sync.WaitGroup
	)
	kill := func() {
		killOnce.Do(func() {
			killed.Store(true)
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("SIGKILL: %v", err)
			}
			close(killedCh)
		})
	}
	for c := range clients {
		wg.Go(func() {
			for i := 0; !killed.Load(); i++ {
				publicID := fmt.Sprintf("r%d-c%02d-%05d", round, c, i)
				ack, err := bootstrapOnce(client, p, publicID)
				if err != nil {
					if !killed.Load() {
						t.Errorf("bootstrap %s before the kill: %v", publicID, err)
						kill()
					}
					return
				}
				mu.Lock()
				acked = append(acked, ack)
				n := len(acked)
				mu.Unlock()
				if n == killAfter {
					kill()
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-killedCh:
	case <-time.After(waitTimeout):
		kill()
		t.Errorf("round %d: %d bootstraps not acknowledged within %v", round, killAfter, waitTimeout)
	}
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("round %d: clients still running %v after the kill", round, waitTimeout)
	}
	if t.Failed() {
		t.FailNow()
	}
	return acked
}

// bootstrapOnce bootstraps one identity with publicID; an error is anything but a
// 200 answer naming that public_id and an agent DID.
func bootstrapOnce(client *http.Client, p *process, publicID string) (ackedIdentity, error) {
	body := fmt.Sprintf(`{"display_name":"Load %s","public_id":%q,"faction":"order"}`, publicID, publicID)
	req, err := http.NewRequest(http.MethodPost, p.url+"/v1/civilization/bootstrap-identity", strings.NewReader(body))
	if err != nil {
		return ackedIdentity{}, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return ackedIdentity{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ackedIdentity{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return ackedIdentity{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var ack ackedIdentity
	if err := json.Unmarshal(b, &ack); err != nil {
		return ackedIdentity{}, fmt.Errorf("decode %s: %w", b, err)
	}
	if ack.PublicID != publicID || !strings.HasPrefix(ack.AgentDID, "did:key:z6Mk") {
		return ackedIdentity{}, fmt.Errorf("answer %s for public_id %s", b, publicID)
	}
	return ack, nil
}

// requireIdentities requires that p serves every acknowledged identity by its
// public_id with the DID it was given, and lists each of them exactly once.
func requireIdentities(t *testing.T, p *process, acked []ackedIdentity) {
	t.Helper()
	for _, a := range acked {
		var got ackedIdentity
		getJSON(t, p.url+"/v1/civilization/public-identity?public_id="+a.PublicID, p.token, 200, &got)
		if got != a {
			t.Fatalf("public-identity %s: %+v, acknowledged as %+v", a.PublicID, got, a)
		}
	}
	listed := map[string]int{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("identities list did not end after %d pages", pages)
		}
		var page struct {
			Identities []ackedIdentity `json:"identities"`
			NextCursor *string         `json:"next_cursor"`
		}
		getJSON(t, p.url+"/v1/civilization/identities?limit=1000&cursor="+cursor, p.token, 200, &page)
		for _, id := range page.Identities {
			listed[id.AgentDID]++
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	for _, a := range acked {
		if listed[a.AgentDID] != 1 {
			t.Fatalf("identities list holds %s (%s) %d times, want once", a.AgentDID, a.PublicID, listed[a.AgentDID])
		}
	}
}

// requireBootstrapPairs requires that every identity.bootstrapped in the export is
// followed at once by the profile.updated of the same agent, the two events that
// one bootstrap appends as a unit (no other request in this test appends
// profile.updated), so that no crash left half a bootstrap in the chain; and that
// every acknowledged identity was bootstrapped.
func requireBootstrapPairs(t *testing.T, export []byte, acked []ackedIdentity) {
	t.Helper()
	var bundle struct {
		Events []struct {
			Seq     uint64 `json:"seq"`
			Type    string `json:"type"`
			Payload struct {
				AgentDID string `json:"agent_did"`
				PublicID string `json:"public_id"`
			} `json:"payload"`
		} `json:"events"`
	}
	if err := json.Unmarshal(export, &bundle); err != nil {
		t.Fatalf("decode export: %v", err)
	}
	evs := bundle.Events
	bootstrapped := map[ackedIdentity]bool{}
	for i, ev := range evs {
		switch ev.Type {
		case "identity.bootstrapped":
			if i+1 == len(evs) || evs[i+1].Type != "profile.updated" || evs[i+1].Payload.AgentDID != ev.Payload.AgentDID {
				t.Fatalf("identity.bootstrapped at seq %d is not followed by the profile.updated of %s", ev.Seq, ev.Payload.AgentDID)
			}
			bootstrapped[ackedIdentity{AgentDID: ev.Payload.AgentDID, PublicID: ev.Payload.PublicID}] = true
		case "profile.updated":
			if i == 0 || evs[i-1].Type != "identity.bootstrapped" {
				t.Fatalf("profile.updated at seq %d does not follow an identity.bootstrapped", ev.Seq)
			}
		}
	}
	for _, a := range acked {
		if !bootstrapped[a] {
			t.Fatalf("acknowledged identity %+v has no identity.bootstrapped in the export", a)
		}
	}
}

var verifiedLine = regexp.MustCompile(`(?m)^ok: ([0-9]+) events, node (\S+), root ([0-9a-f]{64}), tip [0-9a-f]{64}`)

// requireVerified requires a civnode verify run that exited 0 for the chain of node
// did with genesis root, and returns the number of events it verified.
func requireVerified(t *testing.T, what, out string, code int, did, root string) uint64 {
	t.Helper()
	m := verifiedLine.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != did || m[3] != root {
		t.Fatalf("%s: exit %d, output %q; want ok for node %s, root %s", what, code, out, did, root)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runBinaryStdin is runBinary with stdin.
func runBinaryStdin(t *testing.T, stdin []byte, args ...string) (string, int) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, civnodeBin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("run civnode %v: %v", args, err)
	}
	return string(out), 0
}

// process is a civnode serve subprocess.
type process struct {
	cmd    *exec.Cmd
	url    string
	token  string
	stderr *syncBuffer
	waited chan struct{}
	code   int
}

// startProcess runs civnode serve on dir, with flags added to its own.
func startProcess(t *testing.T, dir string, flags ...string) *process {
	t.Helper()
	return startProcessEnv(t, dir, nil, flags...)
}

// startProcessEnv is startProcess with env added to the process's
// environment.
func startProcessEnv(t *testing.T, dir string, env []string, flags ...string) *process {
	t.Helper()
	needBinary(t)
	p := &process{stderr: &syncBuffer{}, waited: make(chan struct{})}
	p.cmd = exec.Command(civnodeBin, append([]string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0",
		"--state-interval", testStateInterval}, flags...)...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		err := p.cmd.Wait()
		p.code = 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -2
		}
		close(p.waited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		select {
		case <-p.waited:
		case <-time.After(waitTimeout):
		}
	})
	select {
	case line := <-lines:
		m := listeningLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("first stdout line %q is not the listening line", line)
		}
		p.url = m[1]
	case <-p.waited:
		t.Fatalf("civnode serve exited with %d before listening\nstderr:\n%s", p.code, p.stderr)
	case <-time.After(waitTimeout):
		t.Fatalf("no listening line within %v\nstderr:\n%s", waitTimeout, p.stderr)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "control.token"))
	if err != nil {
		t.Fatal(err)
	}
	p.token = strings.TrimSpace(string(tok))
	return p
}

func (p *process) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait returns the exit code, -1 when a signal ended the process.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.waited:
		return p.code
	case <-time.After(waitTimeout):
		t.Fatalf("civnode did not exit within %v\nstderr:\n%s", waitTimeout, p.stderr)
		return 0
	}
}

// runBinary runs a one-shot civnode command and returns its combined output and
// exit code.
func runBinary(t *testing.T, args ...string) (string, int) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, civnodeBin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("run civnode %v: %v", args, err)
	}
	return string(out), 0
}
