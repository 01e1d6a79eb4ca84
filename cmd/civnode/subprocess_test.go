package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSubprocessKillRestart runs the real binary, kills it with SIGKILL while it
// serves, and requires each time that it restarts on the same data dir with the
// same node, that the chain verifies with its tip intact, and that every start
// was audited. Then a SIGTERM stops it cleanly.
//
// The chain only grows through the HTTP write endpoints of later issues; until
// they exist the kills land on an idle node, and this test extends to kills under
// concurrent appends over HTTP when they land. The eventlog package's own
// subprocess crash test already kills a writer under concurrent appends.
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

// process is a civnode serve subprocess.
type process struct {
	cmd    *exec.Cmd
	url    string
	token  string
	stderr *syncBuffer
	waited chan struct{}
	code   int
}

func startProcess(t *testing.T, dir string) *process {
	t.Helper()
	p := &process{stderr: &syncBuffer{}, waited: make(chan struct{})}
	p.cmd = exec.Command(civnodeBin, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0")
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
