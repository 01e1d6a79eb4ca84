package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds on waiting for the node subprocess; a start on a large chain reads its
// watermarks and tail, a stop waits for requests in flight.
const (
	nodeStartTimeout = 2 * time.Minute
	nodeStopTimeout  = 2 * time.Minute
	verifyTimeout    = 30 * time.Minute
)

var listening = regexp.MustCompile(`^civnode listening on (http://127\.0\.0\.1:[0-9]+)$`)

// node is a civnode serve subprocess on a data dir, started from the binary
// under test so that the figures are those of the real process, with its own
// heap and cores to contend for.
type node struct {
	cmd    *exec.Cmd
	dir    string
	url    string
	token  string
	ready  time.Duration // process start → first 200 from GET /v1/health
	stderr *tailBuffer
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startNode starts serve on dir and an ephemeral loopback port, and returns
// once GET /v1/health answers 200.
func startNode(ctx context.Context, binary, dir string) (*node, error) {
	n := &node{dir: dir, stderr: &tailBuffer{max: 16 << 10}, exited: make(chan struct{})}
	lw := &listenWriter{found: make(chan string, 1)}
	// --log-level warn: the node logs every request, its start and its stop at
	// info, which would cost the measured node a write per request and only
	// fill the tail kept for error messages.
	n.cmd = exec.Command(binary, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-level", "warn")
	n.cmd.Stdout = lw
	n.cmd.Stderr = n.stderr
	start := time.Now()
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node: %w", err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.exited)
	}()
	fail := func(err error) (*node, error) {
		n.kill()
		return nil, fmt.Errorf("%w\nnode stderr:\n%s", err, n.stderr)
	}
	timer := time.NewTimer(nodeStartTimeout)
	defer timer.Stop()
	select {
	case n.url = <-lw.found:
	case <-n.exited:
		return fail(fmt.Errorf("node exited before listening: %v", n.err))
	case <-timer.C:
		return fail(fmt.Errorf("node printed no listening line within %v", nodeStartTimeout))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	tok, err := os.ReadFile(filepath.Join(dir, "control.token"))
	if err != nil {
		return fail(fmt.Errorf("read owner token: %w", err))
	}
	n.token = strings.TrimSpace(string(tok))

	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	for {
		if healthy(ctx, c, n.url) {
			n.ready = time.Since(start)
			return n, nil
		}
		select {
		case <-n.exited:
			return fail(fmt.Errorf("node exited before answering health: %v", n.err))
		case <-timer.C:
			return fail(fmt.Errorf("GET /v1/health did not answer 200 within %v", nodeStartTimeout))
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func healthy(ctx context.Context, c *http.Client, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/health", nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (n *node) target() *target { return &target{base: n.url, token: n.token} }

func (n *node) pid() int { return n.cmd.Process.Pid }

// stop sends SIGTERM, as an operator would, and requires a clean exit.
func (n *node) stop() error { return n.shutdown(nodeStopTimeout) }

// shutdown sends SIGTERM and waits up to grace for the process to exit, then
// kills it.
func (n *node) shutdown(grace time.Duration) error {
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal node: %w", err)
	}
	select {
	case <-n.exited:
	case <-time.After(grace):
		n.kill()
		return fmt.Errorf("node did not stop within %v of SIGTERM; killed\nnode stderr:\n%s", grace, n.stderr)
	}
	if n.err != nil {
		return fmt.Errorf("node exited with %v\nnode stderr:\n%s", n.err, n.stderr)
	}
	return nil
}

// kill ends the process at once and waits for it; for error paths only.
func (n *node) kill() {
	select {
	case <-n.exited:
		return
	default:
	}
	n.cmd.Process.Kill()
	select {
	case <-n.exited:
	case <-time.After(nodeStopTimeout):
	}
}

// memory reads the node's resident set (VmRSS) and its peak (VmHWM) in MB
// (10^6 bytes) from /proc, so it works on Linux only.
func (n *node) memory() (rss, hwm float64, err error) {
	return procMemory(n.pid())
}

func procMemory(pid int) (rss, hwm float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read node memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("read node memory: %s: %w", name, err)
		}
		if name == "VmRSS" {
			rss = kb * 1024 / 1e6
		} else {
			hwm = kb * 1024 / 1e6
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("read node memory: %w", err)
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, errors.New("read node memory: no VmRSS or VmHWM in /proc status")
	}
	return rss, hwm, nil
}

// resetPeak makes VmHWM start again from the current RSS (Linux clear_refs 5),
// so that a later peak belongs to the phase that follows. It reports whether it
// could.
func (n *node) resetPeak() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", n.pid()), []byte("5"), 0) == nil
}

// watchRSS samples the node's VmRSS every interval until stop is called, which
// returns the largest sample in MB.
func (n *node) watchRSS(interval time.Duration) (stop func() float64) {
	var mu sync.Mutex
	var peak float64
	sample := func() {
		if rss, _, err := n.memory(); err == nil {
			mu.Lock()
			peak = max(peak, rss)
			mu.Unlock()
		}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			sample()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(quit)
		<-done
		sample()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

var verifyOK = regexp.MustCompile(`(?m)^ok: ([0-9]+) events`)

// verifyChain runs civnode verify --data-dir on a stopped node's dir, as an
// operator would, and returns the events it checked and the time it took.
func verifyChain(ctx context.Context, binary, dir string) (uint64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "verify", "--data-dir", dir, "--log-level", "warn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("civnode verify --data-dir: %w\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	mm := verifyOK.FindSubmatch(stdout.Bytes())
	if mm == nil {
		return 0, 0, fmt.Errorf("civnode verify --data-dir: unexpected output %q", stdout.String())
	}
	events, err := strconv.ParseUint(string(mm[1]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("civnode verify --data-dir: %w", err)
	}
	return events, elapsed, nil
}

// listenWriter receives the node's stdout and hands over the URL of the first
// listening line.
type listenWriter struct {
	mu      sync.Mutex
	partial []byte
	found   chan string
	done    bool
}

func (w *listenWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if mm := listening.FindStringSubmatch(line); mm != nil {
			w.found <- mm[1]
			w.done, w.partial = true, nil
			return len(p), nil
		}
	}
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
