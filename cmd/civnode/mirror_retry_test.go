package main

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// flakySource serves a published directory on one loopback port that goes
// down (connections refused), answers 503, or serves, as a CDN in trouble
// does.
type flakySource struct {
	t    *testing.T
	addr string
	url  string
	h    atomic.Pointer[http.Handler] // what the port serves while up

	mu  sync.Mutex
	srv *http.Server // nil while down
}

// newFlakySource is a source of the directory dir, down until up is called.
func newFlakySource(t *testing.T, dir string) *flakySource {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &flakySource{t: t, addr: ln.Addr().String()}
	ln.Close()
	f.url = "http://" + f.addr
	f.serve(dir)
	t.Cleanup(f.down)
	return f
}

// serve makes the port serve the directory dir.
func (f *flakySource) serve(dir string) {
	h := http.FileServer(http.Dir(dir))
	f.h.Store(&h)
}

// unavailable makes the port answer every request 503.
func (f *flakySource) unavailable() {
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the CDN is having a moment", http.StatusServiceUnavailable)
	}))
	f.h.Store(&h)
}

// up listens on the port again, retrying while the kernel still holds it.
func (f *flakySource) up() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		return
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		ln, err := net.Listen("tcp", f.addr)
		if err == nil {
			f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				(*f.h.Load()).ServeHTTP(w, r)
			})}
			go f.srv.Serve(ln)
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("listen on %s again: %v", f.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// down closes the port and every connection to it: connections are refused.
func (f *flakySource) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
}

var retryLine = regexp.MustCompile(`level=WARN msg="the source failed; retrying" from=\S+ attempt=(\d+) retry_in=\S+ err=`)

// waitRetries waits until log holds n more lines of failed attempts than
// it held at seen, each naming says, and returns how many it holds. exited,
// if closed, means the follower is gone, which fails the test.
func waitRetries(t *testing.T, log func() string, exited <-chan struct{}, seen, n int, says string) int {
	t.Helper()
	deadline := time.Now().Add(2 * waitTimeout)
	for {
		var lines []string
		for _, l := range strings.Split(log(), "\n") {
			if retryLine.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) >= seen+n {
			for _, l := range lines[seen:] {
				if !strings.Contains(l, says) {
					t.Fatalf("a failed attempt does not name %q: %s", says, l)
				}
			}
			return len(lines)
		}
		select {
		case <-exited:
			t.Fatalf("the follower exited after %d failed attempts; want it to keep retrying\n%s", len(lines), log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d failed attempts logged, want %d\n%s", len(lines), seen+n, log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRunning waits until cond holds, the follower still running.
func waitRunning(t *testing.T, what string, exited <-chan struct{}, log func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * waitTimeout)
	for !cond() {
		select {
		case <-exited:
			t.Fatalf("the follower exited before %s\n%s", what, log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v\n%s", what, 2*waitTimeout, log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMirrorFollowRetries: civnode mirror, following, meets a source that
// refuses connections and then answers 503, first before it has read the
// origin's key, then after it has caught up: it logs each failed attempt at
// warn with its count and the next delay, keeps running, and catches up once
// the source serves again. A source that then serves another origin's chain
// stops it with exit status 1, as before.
func TestMirrorFollowRetries(t *testing.T) {
	origin := trStoppedNode(t, 600)
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	src := newFlakySource(t, pub) // down: connections refused

	needBinary(t)
	data := filepath.Join(t.TempDir(), "mirror")
	out := &syncBuffer{}
	errOut := &syncBuffer{}
	cmd := exec.Command(civnodeBin, "mirror", "--from", src.url, "--data-dir", data, "--interval", "100ms")
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	log := func() string { return "stdout:\n" + out.String() + "stderr:\n" + errOut.String() }

	seen := waitRetries(t, errOut.String, exited, 0, 2, "connection refused")
	src.unavailable()
	src.up()
	seen = waitRetries(t, errOut.String, exited, seen, 2, "503 Service Unavailable")
	if !strings.Contains(errOut.String(), "attempt=4 ") {
		t.Fatalf("the attempts in a row are not counted:\n%s", errOut)
	}
	src.serve(pub)
	waitRunning(t, "the catch-up to 600 events", exited, log, func() bool { return strings.Contains(out.String(), "tree size 600") })

	// Caught up, the source fails again, and serves a longer chain after.
	src.down()
	seen = waitRetries(t, errOut.String, exited, seen, 1, "connection refused")
	src.unavailable()
	src.up()
	seen = waitRetries(t, errOut.String, exited, seen, 1, "503 Service Unavailable")
	trAppend(t, origin, "more", 300)
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	src.serve(pub)
	waitRunning(t, "the catch-up to 900 events", exited, log, func() bool { return strings.Contains(out.String(), "tree size 900") })

	// Another origin's chain is a problem with what is served: it stops.
	other := trStoppedNode(t, 2)
	otherPub := filepath.Join(t.TempDir(), "other")
	trMust(t, "transparency", "publish", "--dir", otherPub, "--data-dir", other)
	src.serve(otherPub)
	select {
	case <-exited:
	case <-time.After(2 * waitTimeout):
		t.Fatalf("the follower did not stop on another origin's seal\n%s", log())
	}
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != 1 || !strings.Contains(errOut.String(), "signed by another key") {
		t.Fatalf("the follower ended with %v, want exit 1 naming another key\n%s", waitErr, log())
	}
	requireSameChain(t, origin, data, 900)
}

// TestServeMirrorRetries: civnode serve --mirror-of keeps serving what it
// holds while its source answers 503 or refuses connections, logging each
// failed attempt at warn, and catches up once the source serves again; a
// SIGTERM then stops it cleanly.
func TestServeMirrorRetries(t *testing.T) {
	origin := trStoppedNode(t, 600)
	_, vkey := mrOriginKey(t, origin)
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	src := newFlakySource(t, pub)
	src.unavailable()
	src.up()

	p := startProcess(t, filepath.Join(t.TempDir(), "mirror"), "--mirror-of", src.url, "--mirror-interval", "100ms", "--verifier-key", vkey)
	exited := p.waited
	log := func() string { return p.stderr.String() }
	seen := waitRetries(t, p.stderr.String, exited, 0, 2, "503 Service Unavailable")
	treeSize := func() int64 {
		req, _ := http.NewRequest(http.MethodGet, p.url+"/v1/transparency", nil)
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("the mirror does not answer while its source fails: %v", err)
		}
		defer resp.Body.Close()
		var sum struct {
			TreeSize int64 `json:"tree_size"`
		}
		if resp.StatusCode == http.StatusOK {
			json.NewDecoder(resp.Body).Decode(&sum)
		}
		return sum.TreeSize
	}
	if resp, err := httpClient.Get(p.url + "/v1/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the mirror's health while its source answers 503: %v %v", resp, err)
	}
	src.down()
	seen = waitRetries(t, p.stderr.String, exited, seen, 1, "connection refused")
	src.serve(pub)
	src.up()
	waitRunning(t, "the catch-up to 600 events", exited, log, func() bool { return treeSize() == 600 })

	src.down()
	waitRetries(t, p.stderr.String, exited, seen, 1, "connection refused")
	if treeSize() != 600 {
		t.Fatalf("the mirror no longer serves its chain while its source is down")
	}
	trAppend(t, origin, "more", 300)
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	src.up()
	waitRunning(t, "the catch-up to 900 events", exited, log, func() bool { return treeSize() == 900 })
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, log())
	}
}
