package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// TestMirrorScale measures what docs/scaling.md reports, at the size
// CIVNODE_MIRROR_SCALE names (the events of the catch-up chain):
//
//	CIVNODE_MIRROR_SCALE=1000000 go test -run TestMirrorScale -v -timeout 60m ./cmd/civnode/
//
// Without it, it runs at 2,000 events (and a fan-out of 500), so that every
// run of the suite goes through the measurement and holds what does not
// depend on the machine: every figure is there, and the origin serves no
// byte to mirrors that follow its published directory.
//
// It prints, in one run: the Ed25519 verify limit (one core, and all cores),
// a mirror's catch-up rate from a published directory served by a plain
// static file server, and the origin's CPU time and bytes served while 1, 4
// and 16 mirrors follow a chain of CIVNODE_MIRROR_FANOUT events (default
// 20000) through the published directory versus through the origin's API.
func TestMirrorScale(t *testing.T) {
	n, fanout := 2000, 500
	if v, _ := strconv.Atoi(os.Getenv("CIVNODE_MIRROR_SCALE")); v > 0 {
		n, fanout = v, 20000
	}
	if v, _ := strconv.Atoi(os.Getenv("CIVNODE_MIRROR_FANOUT")); v > 0 {
		fanout = v
	}
	one, all := verifyLimit(1), verifyLimit(runtime.GOMAXPROCS(0))
	t.Logf("ed25519 verify limit: %.0f/s on one core, %.0f/s on %d cores (median of 5 × 200 ms)", one, all, runtime.GOMAXPROCS(0))

	origin := scaleOrigin(t, n)
	pub := filepath.Join(t.TempDir(), "log")
	start := time.Now()
	scalePublish(t, origin, pub)
	t.Logf("publish of %d events: %v", n, time.Since(start).Round(time.Millisecond))
	static := httptest.NewServer(http.FileServer(http.Dir(pub)))
	defer static.Close()
	rate, bytes := scaleCatchUp(t, static.URL, false, "")
	t.Logf("catch-up of %d events from the static directory: %.0f events/s (%.2f of the all-core verify limit, %.2f of one core), %d bytes transferred",
		n, rate, rate/all, rate/one, bytes)
	if !(one > 0 && all > 0 && rate > 0 && bytes > 0) {
		t.Errorf("a figure is missing: verify limit %.0f/%.0f, catch-up %.0f events/s, %d bytes", one, all, rate, bytes)
	}

	// The fan-out: a smaller chain, followed by 1, 4 and 16 mirrors at once.
	small := scaleOrigin(t, fanout)
	smallPub := filepath.Join(t.TempDir(), "log")
	scalePublish(t, small, smallPub)
	var staticBytes atomic.Int64
	counted := httptest.NewServer(countingHandler(http.FileServer(http.Dir(smallPub)), &staticBytes))
	defer counted.Close()
	p := startProcess(t, small)
	defer trStop(t, p)
	for _, mirrors := range []int{1, 4, 16} {
		staticBytes.Store(0)
		cpu0 := processCPU(t, p.cmd.Process.Pid)
		scaleFanout(t, counted.URL, false, "", mirrors)
		cpuStatic := processCPU(t, p.cmd.Process.Pid) - cpu0
		cpu0 = processCPU(t, p.cmd.Process.Pid)
		apiBytes := scaleFanout(t, p.url, true, p.token, mirrors)
		cpuAPI := processCPU(t, p.cmd.Process.Pid) - cpu0
		t.Logf("%2d mirrors of %d events: static dir: origin CPU %v, origin bytes 0, static host bytes %d; API: origin CPU %v, origin bytes %d",
			mirrors, fanout, cpuStatic, staticBytes.Load(), cpuAPI, apiBytes)
		if staticBytes.Load() == 0 || apiBytes == 0 {
			t.Errorf("%d mirrors: the static host served %d bytes, the origin's API %d", mirrors, staticBytes.Load(), apiBytes)
		}
	}
}

// verifyLimit is the Ed25519 verify rate of workers goroutines over a
// 300-byte message, the median of 5 bursts of 200 ms.
func verifyLimit(workers int) float64 {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	var rates []float64
	for range 5 {
		var count atomic.Int64
		deadline := time.Now().Add(200 * time.Millisecond)
		var wg sync.WaitGroup
		start := time.Now()
		for range workers {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					for range 64 {
						ed25519.Verify(pub, msg, sig)
					}
					count.Add(64)
				}
			})
		}
		wg.Wait()
		rates = append(rates, float64(count.Load())/time.Since(start).Seconds())
	}
	sort.Float64s(rates)
	return rates[len(rates)/2]
}

// scaleOrigin is the data dir of a stopped node with n events of about the
// size of a mission's.
func scaleOrigin(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	startNode(t, dir).stop(t)
	l := openTestLog(t, dir)
	defer l.Close()
	desc := strings.Repeat("Survey the belt and report. ", 8)
	var wg sync.WaitGroup
	var next atomic.Int64
	next.Store(1)
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(512) - 512
				if i >= int64(n) {
					return
				}
				drafts := make([]eventlog.Draft, min(512, int64(n)-i))
				for j := range drafts {
					drafts[j] = eventlog.Draft{Type: "test.note", Payload: map[string]any{"n": i + int64(j), "description": desc}}
				}
				if _, err := l.Append(context.Background(), drafts...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return dir
}

func scalePublish(t *testing.T, dir, pub string) {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	if _, err := transparency.Publish(context.Background(), transparency.LogSource(l, dir), pub, transparency.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scaleCatchUp mirrors the source at url into a new data dir and returns the
// rate in events a second and the bytes transferred.
func scaleCatchUp(t *testing.T, url string, api bool, token string) (float64, int64) {
	t.Helper()
	c, err := transparency.NewObserverClient(url, token)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k, err := transparency.MirrorKey(context.Background(), c, api, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := datadir.Dir(t.TempDir())
	l, err := dir.OpenMirrorLog(k.PublicKey(), discardLogger(), eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	rep, err := transparency.Mirror(context.Background(), c, l, transparency.MirrorOptions{URL: url, API: api, Evidence: dir.EvidencePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	return float64(rep.Events) / time.Since(start).Seconds(), c.Transferred()
}

// scaleFanout runs mirrors catch-ups at once and returns the bytes they
// transferred.
func scaleFanout(t *testing.T, url string, api bool, token string, mirrors int) int64 {
	t.Helper()
	var total atomic.Int64
	var wg sync.WaitGroup
	for range mirrors {
		wg.Go(func() {
			_, b := scaleCatchUp(t, url, api, token)
			total.Add(b)
		})
	}
	wg.Wait()
	return total.Load()
}

// processCPU is the user and system CPU time of process pid so far.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("process CPU time: %v", err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// countingHandler counts the bytes of the bodies h writes.
func countingHandler(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&countingWriter{ResponseWriter: w, n: n}, r)
	})
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}
