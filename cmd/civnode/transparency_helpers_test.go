package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// trStoppedNode is the data dir of a node that ran once and stopped, with
// events events on its chain, genesis included.
func trStoppedNode(t *testing.T, events int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	startNode(t, dir).stop(t)
	trAppend(t, dir, "base", events-1)
	return dir
}

// trAppend appends n events of type test.note tagged tag to a stopped node's
// chain, in batches, so that copies of one chain given different tags diverge.
func trAppend(t *testing.T, dir, tag string, n int) {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	for done := 0; done < n; {
		k := min(512, n-done)
		drafts := make([]eventlog.Draft, k)
		for i := range drafts {
			drafts[i] = eventlog.Draft{Type: "test.note", Payload: map[string]any{"tag": tag, "n": done + i}}
		}
		if _, err := l.Append(context.Background(), drafts...); err != nil {
			t.Fatal(err)
		}
		done += k
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// trCopyDir copies a stopped node's data dir: the same key, token and chain.
func trCopyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.Chmod(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case !d.Type().IsRegular():
			return nil // a socket of a node that did not stop cleanly
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// trTreeHead is the signed checkpoint and verifier key of a stopped node.
func trTreeHead(t *testing.T, dir string) (eventlog.TreeHead, []byte, string) {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	head, signed, err := l.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	return head, signed, l.VerifierKey()
}

// trRun runs the civnode binary and returns its stdout, stderr and exit code.
func trRun(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	return trRunToken(t, "", stdin, args...)
}

// trRunToken is trRun with $CIVNODE_TOKEN set to token.
func trRunToken(t *testing.T, token string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, civnodeBin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "CIVNODE_TOKEN="+token) // only what the test gives
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return o.String(), e.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("run civnode %v: %v", args, err)
	}
	return o.String(), e.String(), 0
}

// trMust runs civnode and requires exit status 0; it returns stdout.
func trMust(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := trRun(t, nil, args...)
	if code != 0 {
		t.Fatalf("civnode %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// trFails runs civnode and requires exit status code and a stderr naming
// want; it returns stdout.
func trFails(t *testing.T, code int, want string, args ...string) string {
	t.Helper()
	out, errOut, got := trRun(t, nil, args...)
	if got != code || !strings.Contains(errOut, want) {
		t.Fatalf("civnode %s: exit %d, stderr %q; want exit %d naming %q\nstdout: %s", strings.Join(args, " "), got, errOut, code, want, out)
	}
	return out
}

// trGet fetches url with token and requires 200; it returns the body.
func trGet(t *testing.T, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", url, resp.StatusCode, err, body)
	}
	return body
}

// trStop stops a subprocess node with SIGTERM and requires a clean exit.
func trStop(t *testing.T, p *process) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\nstderr:\n%s", code, p.stderr)
	}
}

// trObserverToken issues an observer token on the node running on dir.
func trObserverToken(t *testing.T, dir string) string {
	t.Helper()
	res := runCLI(t, nil, "token", "create", "--observer", "--data-dir", dir)
	if res.code != 0 {
		t.Fatalf("token create --observer: exit %d: %s", res.code, res.stderr)
	}
	return strings.TrimSpace(res.stdout)
}

// trOpen verifies a checkpoint with a verifier key, independently of the
// command's own code: note.Open and the body's three lines.
func trOpen(t *testing.T, vkey string, signed []byte) tlog.Tree {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatalf("verifier key %q: %v", vkey, err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint %q: %v", signed, err)
	}
	var origin, root64 string
	var size int64
	if _, err := fmt.Sscanf(n.Text, "%s\n%d\n%s\n", &origin, &size, &root64); err != nil || origin != v.Name() {
		t.Fatalf("checkpoint body %q: origin %q, %v", n.Text, origin, err)
	}
	root, err := tlog.ParseHash(root64)
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Tree{N: size, Hash: root}
}

// dirTiles reads hash tiles from a publish directory, as an observer's tlog
// client reads them from a static host.
type dirTiles struct{ dir string }

func (d dirTiles) Height() int { return transparency.TileHeight }

func (d dirTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(transparency.TilePath(t))))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (dirTiles) SaveTiles([]tlog.Tile, [][]byte) {}
