package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
)

// civnodeBin is the binary built once for the subprocess tests.
var civnodeBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() || fuzzing() {
		// The inner loop: no binary, so every test that runs one skips
		// (needBinary); the full suite builds it once here. A fuzz run
		// (and each of its workers, which run TestMain again) needs none
		// either: building it took the fuzzer's whole -fuzztime.
		return m.Run()
	}
	tmp, err := os.MkdirTemp("", "civnode-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	civnodeBin = filepath.Join(tmp, "civnode")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool(), "build", "-o", civnodeBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build civnode: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// fuzzing reports whether this process runs a fuzz target or is one of its
// workers.
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// needBinary skips t under go test -short, which builds no binary: the tests
// that run civnode as a subprocess (SIGKILL rounds, soaks, the CLI through
// the real binary) belong to the full suite, the README's test command.
func needBinary(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the civnode binary as a subprocess; the full suite runs it")
	}
	if civnodeBin == "" {
		t.Skip("no civnode binary is built while fuzzing")
	}
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

const (
	waitTimeout = 30 * time.Second // bound on every wait for a node
	cliTimeout  = time.Minute      // bound on one one-shot command
)

var listeningLine = regexp.MustCompile(`^civnode listening on (http://127\.0\.0\.1:[0-9]+)$`)

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lineWriter hands each complete line written to it to lines; lines beyond the
// channel's capacity are kept only in all.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	all     bytes.Buffer
	lines   chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 16)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.partial[:i]):
		default:
		}
		w.partial = w.partial[i+1:]
	}
}

// testMain returns a Main with buffers for its streams and an empty environment.
func testMain(stdin []byte, stdout io.Writer, stderr io.Writer) *Main {
	return &Main{
		Stdin:   bytes.NewReader(stdin),
		Stdout:  stdout,
		Stderr:  stderr,
		Getenv:  func(string) string { return "" },
		HomeDir: func() (string, error) { return "", errors.New("tests have no home directory") },
	}
}

// cliResult is the outcome of one in-process command.
type cliResult struct {
	stdout, stderr string
	code           int
	err            error
}

// runCLI runs one command through Main.Run, as the binary would.
func runCLI(t *testing.T, stdin []byte, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	var stdout, stderr syncBuffer
	err := testMain(stdin, &stdout, &stderr).Run(ctx, args)
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), code: ExitCode(err), err: err}
}

// node is a serve command running in process.
type node struct {
	dir    string
	url    string
	token  string
	cancel context.CancelFunc
	done   chan error
	stderr *syncBuffer
}

// startNode runs serve on dir and an ephemeral loopback port, and waits for the
// listening line.
func startNode(t *testing.T, dir string) *node {
	t.Helper()
	return startNodeArgs(t, dir)
}

// startNodeArgs is startNode with extra serve arguments.
func startNodeArgs(t *testing.T, dir string, extra ...string) *node {
	t.Helper()
	return serveUntilListening(t, dir, listeningLine, append([]string{"--addr", "127.0.0.1:0"}, extra...)...)
}

// serveUntilListening runs serve on dir with args and waits for its first
// stdout line, which must match line; its group is the node's URL.
func serveUntilListening(t *testing.T, dir string, line *regexp.Regexp, args ...string) *node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newLineWriter()
	n := &node{dir: dir, cancel: cancel, done: make(chan error, 1), stderr: &syncBuffer{}}
	args = append([]string{"serve", "--data-dir", dir, "--state-interval", testStateInterval}, args...)
	go func() { n.done <- testMain(nil, out, n.stderr).Run(ctx, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-n.done:
		case <-time.After(waitTimeout):
		}
	})
	select {
	case first := <-out.lines:
		mm := line.FindStringSubmatch(first)
		if mm == nil {
			t.Fatalf("first stdout line %q is not the listening line", first)
		}
		n.url = mm[1]
	case err := <-n.done:
		n.done <- err
		t.Fatalf("serve ended before listening: %v\nstderr:\n%s", err, n.stderr)
	case <-time.After(waitTimeout):
		t.Fatalf("no listening line within %v\nstderr:\n%s", waitTimeout, n.stderr)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "control.token"))
	if err != nil {
		t.Fatal(err)
	}
	n.token = strings.TrimSpace(string(tok))
	return n
}

// testStateInterval is the --state-interval of the nodes the tests start,
// unless a test gives its own: a state.committed is an event the node
// appends on its own, about a second after a change, which would land among
// the events a test counts at a moment of the machine's choosing. The tests
// of the state commitments ask for it.
const testStateInterval = "1h"

// stop cancels serve's context, as SIGINT/SIGTERM do, and requires a clean exit.
func (n *node) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	select {
	case err := <-n.done:
		n.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve returned %v\nstderr:\n%s", err, n.stderr)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("serve did not stop within %v", waitTimeout)
	}
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// getJSON fetches url with the bearer token (none when empty), requires status
// want, decodes the body into v (if not nil) and returns the raw body.
func getJSON(t *testing.T, url, token string, want int, v any) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d; body %s", url, resp.StatusCode, want, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("GET %s: Content-Type %q, want application/json", url, ct)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: decode %s: %v", url, body, err)
		}
	}
	return body
}

// Response shapes of docs/api.md, as far as these tests read them.
type (
	stateBody struct {
		Identity struct {
			NodeDID   string `json:"node_did"`
			PublicKey string `json:"public_key"`
		} `json:"identity"`
		Chain struct {
			Seq      uint64 `json:"seq"`
			TipHash  string `json:"tip_hash"`
			RootHash string `json:"root_hash"`
		} `json:"chain"`
	}
	eventsBody struct {
		Events []eventlog.Event `json:"events"`
		Total  uint64           `json:"total"`
	}
	auditBody struct {
		Entries []eventlog.AuditEntry `json:"entries"`
	}
)

// appendNotes appends n events of type test.note directly to a stopped node's
// chain: it gives the end-to-end test events of a type no read model folds, so
// export, verify and replay are exercised on events as such.
func appendNotes(t *testing.T, dir string, from, n int) {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	for i := from; i < from+n; i++ {
		if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.note", Payload: map[string]int{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// openTestLog opens a stopped node's event log; the caller closes it.
func openTestLog(t *testing.T, dir string) *eventlog.Log {
	t.Helper()
	l, err := localnode.OpenChain(datadir.Dir(dir), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// auditActions returns the audit entries of a stopped node with the given action.
func auditActions(t *testing.T, dir, action string) []eventlog.AuditEntry {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	es, err := l.AuditEntries(eventlog.AuditQuery{Action: action, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
