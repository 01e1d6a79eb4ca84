package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMirrorDataDir: a mirror's data dir (no node.key; origin.vkey instead)
// is backed up, restored and checked as a node's is. Mirrors of a running
// node, one made with civnode mirror and stopped, one served by serve
// --mirror-of and running, are backed up; each backup restores into a
// working mirror dir, which doctor passes with an origin_key line in place of
// node_key, which verify and replay check with the origin's key, and which
// civnode mirror goes on following. doctor passes the running mirror too,
// and verify and replay take the stopped one itself.
func TestMirrorDataDir(t *testing.T) {
	origin := trStoppedNode(t, 300)
	l := openTestLog(t, origin)
	did := l.NodeDID()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, origin)
	var sum struct {
		TreeSize int64 `json:"tree_size"`
	}
	getJSON(t, n.url+"/v1/transparency", n.token, 200, &sum)

	stopped := filepath.Join(t.TempDir(), "mirror")
	if out, errOut, code := mrMirror(t, n.url, stopped, "--token", n.token); code != 0 {
		t.Fatalf("civnode mirror: exit %d, %q %q", code, out, errOut)
	}
	requireMirrorWorks(t, stopped, did, sum.TreeSize)

	running := filepath.Join(t.TempDir(), "served")
	p := startProcess(t, running, "--mirror-of", n.url, "--mirror-token", n.token, "--mirror-interval", "100ms")
	waitMirrorTree(t, p, sum.TreeSize)
	requireDoctor(t, running, strings.TrimPrefix(p.url, "http://"), "warn", map[string]string{"origin_key": "ok", "node": "ok", "chain": "ok", "port": "warn"})

	backups := map[string]string{}
	for name, dir := range map[string]string{"stopped": stopped, "running": running} {
		b := filepath.Join(t.TempDir(), "backup")
		out := trMust(t, "backup", b, "--data-dir", dir)
		if !strings.Contains(out, "mirror of "+did+"\n") {
			t.Fatalf("backup of the %s mirror: %q", name, out)
		}
		backups[name] = b
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("the mirror exited with %d\nstderr:\n%s", code, p.stderr)
	}

	code, b := msPost(t, n.url, n.token, "/v1/civilization/bootstrap-identity", map[string]any{"display_name": "Ada", "public_id": "ada", "role": "enforcer"})
	if code != http.StatusOK {
		t.Fatalf("POST bootstrap-identity: %d %s", code, b)
	}
	getJSON(t, n.url+"/v1/transparency", n.token, 200, &sum)
	var restoredDirs []string
	for name, b := range backups {
		restored := filepath.Join(t.TempDir(), "restored")
		out := trMust(t, "restore", b, "--data-dir", restored)
		if !strings.Contains(out, "mirror of "+did+"\n") {
			t.Fatalf("restore of the %s mirror's backup: %q", name, out)
		}
		if _, err := os.Stat(filepath.Join(restored, "node.key")); !os.IsNotExist(err) {
			t.Fatalf("the restored mirror has a node.key: %v", err)
		}
		requireMirrorWorks(t, restored, did, 0)
		out, errOut, code := mrMirror(t, n.url, restored, "--token", n.token)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("tree size %d,", sum.TreeSize)) || !strings.Contains(out, "events stored") {
			t.Fatalf("civnode mirror into the restored %s mirror: exit %d, %q %q", name, code, out, errOut)
		}
		restoredDirs = append(restoredDirs, restored)
	}
	n.stop(t)
	for _, dir := range restoredDirs {
		requireSameChain(t, origin, dir, int(sum.TreeSize))
	}
}

// requireMirrorWorks: verify and replay check the chain of the stopped
// mirror in dir with the origin's key, and then (the read models built,
// which civnode mirror does not fold) every check of doctor passes; when
// size is not 0, the chain has size events.
func requireMirrorWorks(t *testing.T, dir, did string, size int64) {
	t.Helper()
	out := trMust(t, "verify", "--data-dir", dir)
	if !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "node "+did) || !strings.Contains(out, "every event verifies with the origin's key in origin.vkey") {
		t.Fatalf("verify --data-dir of the mirror: %q", out)
	}
	if size > 0 && !strings.HasPrefix(out, fmt.Sprintf("ok: %d events,", size)) {
		t.Fatalf("verify --data-dir of the mirror: %q, want %d events", out, size)
	}
	if out := trMust(t, "replay", "--data-dir", dir); !strings.Contains(out, "differences from the kept models") {
		t.Fatalf("replay --data-dir of the mirror: %q", out)
	}
	requireDoctor(t, dir, "127.0.0.1:0", "ok", map[string]string{"origin_key": "ok", "chain": "ok", "read_models": "ok", "node": "ok"})
}

// requireDoctor runs doctor on dir with --addr addr and requires the
// report's status, and the status of each check named in want; a mirror's
// report has no node_key line.
func requireDoctor(t *testing.T, dir, addr, status string, want map[string]string) {
	t.Helper()
	out, errOut, code := trRun(t, nil, "doctor", "--data-dir", dir, "--addr", addr, "--registry-url", "", "--json")
	var rep struct {
		Status string `json:"status"`
		Checks []struct {
			Name, Status, Detail string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Status != status {
		t.Fatalf("doctor of the mirror %s: exit %d, status %q (want %q), %v\n%s%s", dir, code, rep.Status, status, err, out, errOut)
	}
	got := map[string]string{}
	for _, c := range rep.Checks {
		got[c.Name] = c.Status
	}
	if _, ok := got["node_key"]; ok {
		t.Errorf("doctor of the mirror %s has a node_key line:\n%s", dir, out)
	}
	for name, st := range want {
		if got[name] != st {
			t.Errorf("doctor of the mirror %s: %s is %q, want %q\n%s", dir, name, got[name], st, out)
		}
	}
}

// waitMirrorTree waits until the mirror served by p holds the tree of size
// events.
func waitMirrorTree(t *testing.T, p *process, size int64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		var ms struct {
			TreeSize int64 `json:"tree_size"`
		}
		code, _, b := msGet(t, p.url+"/v1/transparency", p.token)
		if code == 200 && json.Unmarshal(b, &ms) == nil && ms.TreeSize == size {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror did not reach tree size %d: %d %s\nstderr:\n%s", size, code, b, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
