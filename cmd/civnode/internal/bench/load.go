package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loadOp is one operation of a load phase, run by worker (0..workers-1). It
// returns how many items the operation carried (events served, for a read), which
// the phase sums.
type loadOp func(ctx context.Context, worker int) (items int, err error)

// loadResult is what a load phase measured.
type loadResult struct {
	ops     int64
	items   int64
	elapsed time.Duration
	lat     []time.Duration // sorted
}

// latencyResult is a loadResult of latencies alone, sorted as quantile
// needs them.
func latencyResult(lat []time.Duration) loadResult {
	slices.Sort(lat)
	return loadResult{lat: lat}
}

func (r loadResult) opsPerSecond() float64   { return rate(r.ops, r.elapsed) }
func (r loadResult) itemsPerSecond() float64 { return rate(r.items, r.elapsed) }

// quantile is the latency below which a fraction q of the operations finished,
// in milliseconds.
func (r loadResult) quantile(q float64) float64 {
	if len(r.lat) == 0 {
		return 0
	}
	return ms(r.lat[int(q*float64(len(r.lat)-1))])
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runLoad runs op on workers goroutines, each starting operations until d has
// passed or max operations have started in all (max ≤ 0: no count bound). An
// operation in flight at the deadline runs to its end and counts, so the rate is
// operations over the time until the last one finished. The first error stops
// every worker and is returned. done, if set, is called with the number of
// operations finished so far.
func runLoad(ctx context.Context, workers int, d time.Duration, max int64, op loadOp, done func(n int64)) (loadResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var started, finished, items atomic.Int64
	lat := make([][]time.Duration, workers)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) && (max <= 0 || started.Add(1) <= max) {
				t0 := time.Now()
				n, err := op(ctx, w)
				if err != nil {
					cancel(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				items.Add(int64(n))
				if k := finished.Add(1); done != nil {
					done(k)
				}
			}
		})
	}
	wg.Wait()
	res := loadResult{ops: finished.Load(), items: items.Load(), elapsed: time.Since(start), lat: slices.Concat(lat...)}
	slices.Sort(res.lat)
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// newLoadClient is a keep-alive client for conns concurrent callers on loopback:
// every caller keeps its own connection, and nothing is compressed, so the
// figures measure the node, not gzip.
func newLoadClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // loopback only; never through a proxy from the environment
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
			IdleConnTimeout:     time.Minute,
		},
		Timeout: timeout,
	}
}

// loadClient is newLoadClient for the node under load, over TLS as
// Config.TLS says for an https:// --node. It speaks HTTP/1.1 there too, a
// connection per caller, as over plain HTTP.
func (b *harness) loadClient(conns int, timeout time.Duration) *http.Client {
	c := newLoadClient(conns, timeout)
	c.Transport.(*http.Transport).TLSClientConfig = b.cfg.TLS
	return c
}

func closeClient(c *http.Client) { c.CloseIdleConnections() }

// target is the node under load: its base URL and the owner token.
type target struct {
	base  string // http://127.0.0.1:PORT
	token string
}

// bodyLimit bounds what the bench reads of one answer outside the hostile phase.
const bodyLimit = 64 << 20

// do sends one request with the owner token and reads the answer into buf (reset
// first). It returns an error for any status but want.
func (t *target) do(ctx context.Context, c *http.Client, method, path string, body []byte, want int, buf *bytes.Buffer) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return err
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, pathOnly(path), err)
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, bodyLimit)); err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, pathOnly(path), err)
	}
	if resp.StatusCode != want {
		return &statusError{method: method, path: pathOnly(path), got: resp.StatusCode, want: want, body: snippet(buf.Bytes())}
	}
	return nil
}

// call is do for one-off requests, decoding a 200 answer into out (if not nil).
func (t *target) call(ctx context.Context, c *http.Client, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := t.do(ctx, c, method, path, body, http.StatusOK, &buf); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(buf.Bytes(), out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, pathOnly(path), err)
	}
	return nil
}

// pathOnly drops the query, which the messages do not need.
func pathOnly(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// buffers hands each worker its own reusable answer buffer.
type buffers []bytes.Buffer

func newBuffers(n int) buffers { return make(buffers, n) }

func (b buffers) of(worker int) *bytes.Buffer { return &b[worker] }
