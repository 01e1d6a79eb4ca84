//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The soak tests run a node in this process (serve on a loopback port, as the
// end-to-end tests do) under load for a while, sample the process's memory
// and goroutines, and require memory to stay flat under steady load and the
// goroutines to come back to where they were once the load stops.
//
// Every go test ./... runs the short form, 10 s of load per test. The full
// form runs each test for as long as CIVNODE_SOAK says:
//
//	CIVNODE_SOAK=10m go test ./cmd/civnode -run Soak -v -timeout 40m
//
// Give the full form 10m: the read models' cache (eventlog, 65,536 entries)
// takes about 4 minutes of the mixed load to fill, and a run much shorter
// than that sees it filling as growth. CIVNODE_SOAK_PROFILE=dir also writes a
// heap profile as each load ends.
//
// The figures go to the test log (-v); docs/reliability.md quotes them. The
// health latency bound is asserted in the full form only, which is meant for
// a quiet machine: the short form runs beside the rest of the suite, under
// -race in CI, where a timed assertion would measure the neighbours.
const soakEnv = "CIVNODE_SOAK"

// soakLength is how long each soak test loads the node, and whether this is
// the full form.
func soakLength(t *testing.T) (time.Duration, bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a soak runs for 10 s at least; the full suite runs it")
	}
	v := os.Getenv(soakEnv)
	if v == "" {
		return 10 * time.Second, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 10m", soakEnv, v)
	}
	return d, true
}

// soakHealthP99 is the bound on GET /v1/health's 99th percentile latency
// during the full form: a node under load still answers within 50 ms.
const soakHealthP99 = 50 * time.Millisecond

// TestSoakMixed runs a mixed load: writers taking missions through their whole
// lifecycle (create, claim, complete, settle), readers of the identity, mission
// and event views, MCP tool calls, WebSocket followers that must see every
// event in order (resuming with after_seq when dropped), clients that open a
// stream, read a little and leave, and a health probe. Every request must
// succeed; the live heap's peak in the last third of the run must be within a
// quarter (plus 16 MiB) of its peak in the first third, warm-up left out;
// and once the load stops, the goroutines must return to their count before it.
func TestSoakMixed(t *testing.T) {
	d, full := soakLength(t)
	n := startNode(t, t.TempDir())
	c := newSoakClient(n.url, n.token, 16)
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	claimers := []string{"soak-a", "soak-b", "soak-c", "soak-d"}
	c.mustBootstrap(t, "soak-pub", "broker")
	for _, slug := range claimers {
		c.mustBootstrap(t, slug, "enforcer")
	}
	baseline := soakSettledGoroutines()

	var errs soakErrors
	var lifecycles, reads, mcpCalls, churned atomic.Int64
	load, stopLoad := context.WithTimeout(ctx, d)
	defer stopLoad()
	var wg sync.WaitGroup
	samples := startSoakSampler(soakEvery(d))

	const writers = 4
	for w := range writers {
		wg.Go(func() {
			claimer := claimers[w%len(claimers)]
			for i := 0; load.Err() == nil; i++ {
				if err := c.lifecycle(load, claimer, fmt.Sprintf("result %d of writer %d", i, w)); err != nil {
					errs.add(load, "lifecycle", err)
					continue
				}
				lifecycles.Add(1)
			}
		})
	}
	readPaths := []string{
		"/v1/civilization/identities?limit=50", "/v1/civilization/public-identity?public_id=soak-a",
		"/v1/civilization/profile?public_id=soak-b", "/v1/events?limit=100&type=mission.*",
		"/v1/core/missions?state=settled&limit=50", "/v1/core/missions/my?public_id=soak-c&limit=20",
		"/v1/state", "/v1/civilization/briefing?hours=1", "/v1/supervision/home?public_id=soak-pub",
		"/v1/civilization/metrics", "/v1/game/status",
	}
	for r := range 3 {
		wg.Go(func() {
			for i := r; load.Err() == nil; i++ {
				p := readPaths[i%len(readPaths)]
				if _, err := c.call(load, http.MethodGet, p, nil, http.StatusOK); err != nil {
					errs.add(load, "GET "+p, err)
					continue
				}
				reads.Add(1)
			}
		})
	}
	wg.Go(func() {
		tools := []string{`{"name":"query_events","arguments":{"limit":20,"type":"mission.settled"}}`,
			`{"name":"list_missions","arguments":{"state":"created","limit":10}}`,
			`{"name":"get_identity","arguments":{"public_id":"soak-d"}}`}
		for i := 0; load.Err() == nil; i++ {
			if err := c.mcpCall(load, i, tools[i%len(tools)]); err != nil {
				errs.add(load, "mcp", err)
				continue
			}
			mcpCalls.Add(1)
			soakPause(load, 5*time.Millisecond)
		}
	})
	followers := make([]*soakFollower, 4)
	for i := range followers {
		followers[i] = &soakFollower{c: c}
		wg.Go(func() { followers[i].run(load, &errs) })
	}
	wg.Go(func() {
		for load.Err() == nil {
			if err := c.streamGlance(load); err != nil {
				errs.add(load, "stream glance", err)
			} else {
				churned.Add(1)
			}
			soakPause(load, 50*time.Millisecond)
		}
	})
	health := startSoakHealth(load, c.base, 50*time.Millisecond)

	wg.Wait()
	hs := health.wait()
	mem := samples.stop()
	soakHeapProfile(t, "mixed")

	// Every follower reads up to the tip the writers left: nothing was lost.
	tip := c.tip(t)
	for i, f := range followers {
		if err := f.catchUp(ctx, tip); err != nil {
			t.Errorf("stream follower %d: %v", i, err)
		}
	}
	c.close()
	after := soakWaitGoroutines(t, baseline)

	t.Logf("soak mixed: %v of load (%s)", d, map[bool]string{true: "full form", false: "short form"}[full])
	t.Logf("  lifecycles %d (%.0f/s), reads %d (%.0f/s), MCP calls %d, stream glances %d, events %d, follower resumes %d",
		lifecycles.Load(), float64(lifecycles.Load())/d.Seconds(), reads.Load(), float64(reads.Load())/d.Seconds(),
		mcpCalls.Load(), churned.Load(), tip, soakResumes(followers))
	hs.log(t)
	mem.log(t)
	t.Logf("  goroutines: %d before the load, %d at its peak, %d after", baseline, mem.peakGoroutines(), after)
	errs.check(t)
	if hs.failures > 0 {
		t.Errorf("%d health probes failed", hs.failures)
	}
	if full && hs.p99 > soakHealthP99 {
		t.Errorf("health p99 %v, want under %v", hs.p99, soakHealthP99)
	}
	mem.checkFlat(t, 16<<20)
}

// soakEvery is the sampling interval: about 60 samples a run, at least 4 a
// second and at most one every 10 s.
func soakEvery(d time.Duration) time.Duration {
	return min(max(d/60, 250*time.Millisecond), 10*time.Second)
}

// soakPause waits d or until ctx ends.
func soakPause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// soakClient is an HTTP client of the node with the owner token.
type soakClient struct {
	base, token string
	tr          *http.Transport
	hc          *http.Client
}

func newSoakClient(base, token string, conns int) *soakClient {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	return &soakClient{base: base, token: token, tr: tr, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

func (c *soakClient) close() { c.tr.CloseIdleConnections() }

// call sends one request and returns the body, or an error when the status is
// not want.
func (c *soakClient) call(ctx context.Context, method, path string, body []byte, want int, header ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: status %d: %.300s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

func (c *soakClient) post(ctx context.Context, path string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return c.call(ctx, http.MethodPost, path, b, http.StatusOK)
}

// mustBootstrap makes an identity of the order with role, bound to a
// controller.
func (c *soakClient) mustBootstrap(t *testing.T, slug, role string) {
	t.Helper()
	ctx := context.Background()
	b, err := c.post(ctx, "/v1/civilization/bootstrap-identity", map[string]string{"display_name": "Soak " + slug,
		"public_id": slug, "faction": "order", "role": role, "home_subnet_id": "genesis"})
	if err != nil {
		t.Fatal(err)
	}
	var id struct {
		AgentDID string `json:"agent_did"`
	}
	if err := json.Unmarshal(b, &id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.post(ctx, "/v1/civilization/controller-binding", map[string]string{"agent_did": id.AgentDID,
		"controller_kind": "local_model", "controller_ref": "soak@" + slug}); err != nil {
		t.Fatal(err)
	}
}

// soakMission is the create body of the soak's missions.
var soakMission = []byte(`{"title":"Escort the ore convoy","description":"Escort the ore convoy from the north dock to the refinery.",` +
	`"publisher":"soak-pub","publisher_kind":"organization","domain":"security","subnet_id":"genesis","zone_id":"north-dock",` +
	`"required_role":"enforcer","required_faction":"order","reward":{"agent_credit":1,"reputation":1,"capacity":0,"treasury_share_credit":0},` +
	`"payload":{"route":["north-dock","refinery"],"escorts":2}}`)

// createClaim publishes a mission and claims it for claimer.
func (c *soakClient) createClaim(ctx context.Context, claimer string) (string, error) {
	b, err := c.call(ctx, http.MethodPost, "/v1/core/missions", soakMission, http.StatusOK)
	if err != nil {
		return "", err
	}
	var m struct {
		MissionID string `json:"mission_id"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.MissionID == "" {
		return "", fmt.Errorf("create: no mission_id in %.200s", b)
	}
	if _, err := c.post(ctx, "/v1/core/missions/"+m.MissionID+"/claim", map[string]string{"claimer": claimer}); err != nil {
		return "", err
	}
	return m.MissionID, nil
}

// lifecycle takes one mission from create to settle.
func (c *soakClient) lifecycle(ctx context.Context, claimer, result string) error {
	id, err := c.createClaim(ctx, claimer)
	if err != nil {
		return err
	}
	if _, err := c.post(ctx, "/v1/core/missions/"+id+"/complete", map[string]string{"result": result}); err != nil {
		return err
	}
	_, err = c.call(ctx, http.MethodPost, "/v1/core/missions/"+id+"/settle", []byte(`{}`), http.StatusOK)
	return err
}

// mcpCall calls one tool through POST /mcp and requires a result that is
// not an error.
func (c *soakClient) mcpCall(ctx context.Context, id int, params string) error {
	body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":` + params + `}`)
	b, err := c.call(ctx, http.MethodPost, "/mcp", body, http.StatusOK, "Accept", "application/json, text/event-stream")
	if err != nil {
		return err
	}
	var resp struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || resp.Result == nil || resp.Result.IsError {
		return fmt.Errorf("mcp %s: %.300s", params, b)
	}
	return nil
}

// tip is the chain's seq now.
func (c *soakClient) tip(t *testing.T) uint64 {
	t.Helper()
	b, err := c.call(context.Background(), http.MethodGet, "/v1/state", nil, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	var st stateBody
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st.Chain.Seq
}

// dialStream opens GET /v1/stream with query.
func (c *soakClient) dialStream(ctx context.Context, query string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/v1/stream" + query
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.token}},
		HTTPClient: &http.Client{Transport: &http.Transport{}},
	})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial stream%s: status %d: %w", query, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("dial stream%s: %w", query, err)
	}
	conn.SetReadLimit(16 << 20)
	return conn, nil
}

// streamGlance opens a stream of settlements from the start, reads up to five
// and leaves.
func (c *soakClient) streamGlance(ctx context.Context) error {
	conn, err := c.dialStream(ctx, "?type=mission.settled&after_seq=0")
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer conn.CloseNow()
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for range 5 {
		if _, _, err := conn.Read(rctx); err != nil {
			// Fewer than five so far, or the load ended: a Read cut short by
			// its context has closed the connection itself, so there is
			// nothing left to close. A close frame from the node is a fault.
			if websocket.CloseStatus(err) != -1 {
				return fmt.Errorf("the node closed the stream: %w", err)
			}
			return nil
		}
	}
	return conn.Close(websocket.StatusNormalClosure, "glanced")
}

// soakFollower follows the whole stream and requires every event, in order:
// when the node drops it (a slow consumer) it resumes after the last seq it
// read.
type soakFollower struct {
	c       *soakClient
	mu      sync.Mutex
	last    uint64
	resumes int
	err     error
}

func (f *soakFollower) run(ctx context.Context, errs *soakErrors) {
	for ctx.Err() == nil {
		if err := f.follow(ctx, 0); err != nil && ctx.Err() == nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) { // a close by the node is a drop to resume from
				errs.add(ctx, "stream follower", err)
				soakPause(ctx, 100*time.Millisecond)
			}
			f.mu.Lock()
			f.resumes++
			f.mu.Unlock()
		}
	}
}

// follow reads the stream after the last seq read until ctx ends, an error,
// or the seq upTo (0: no end).
func (f *soakFollower) follow(ctx context.Context, upTo uint64) error {
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	if upTo > 0 && last >= upTo {
		return nil
	}
	conn, err := f.c.dialStream(ctx, "?after_seq="+strconv.FormatUint(last, 10))
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var ev struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(msg, &ev); err != nil {
			return fmt.Errorf("stream message %.100s: %w", msg, err)
		}
		f.mu.Lock()
		if ev.Seq != f.last+1 {
			err = fmt.Errorf("stream gave seq %d after %d", ev.Seq, f.last)
			f.err = errors.Join(f.err, err)
		}
		f.last = ev.Seq
		f.mu.Unlock()
		if err != nil {
			return err
		}
		if upTo > 0 && ev.Seq >= upTo {
			return conn.Close(websocket.StatusNormalClosure, "caught up")
		}
	}
}

// catchUp reads on until tip and reports any gap seen during the run.
func (f *soakFollower) catchUp(ctx context.Context, tip uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := f.follow(ctx, tip); err != nil {
		return fmt.Errorf("catching up to seq %d: %w", tip, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func soakResumes(fs []*soakFollower) int {
	n := 0
	for _, f := range fs {
		f.mu.Lock()
		n += f.resumes
		f.mu.Unlock()
	}
	return n
}

// soakErrors counts failed requests by kind, keeping the first few.
type soakErrors struct {
	mu     sync.Mutex
	counts map[string]int
	first  []string
}

// add records err unless ctx has ended (a request the end of the load cut).
func (e *soakErrors) add(ctx context.Context, kind string, err error) {
	if ctx.Err() != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	e.counts[kind]++
	if len(e.first) < 10 {
		e.first = append(e.first, kind+": "+err.Error())
	}
}

func (e *soakErrors) check(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.counts) > 0 {
		t.Errorf("failed requests by kind: %v; first:\n%s", e.counts, strings.Join(e.first, "\n"))
	}
}

// soakHealth probes GET /v1/health on a connection of its own.
type soakHealth struct {
	done chan soakHealthStats
}

type soakHealthStats struct {
	probes, failures   int
	p50, p99, maxDelay time.Duration
}

func startSoakHealth(ctx context.Context, base string, every time.Duration) *soakHealth {
	h := &soakHealth{done: make(chan soakHealthStats, 1)}
	go func() {
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		var lat []time.Duration
		var st soakHealthStats
		tick := time.NewTicker(every)
		defer tick.Stop()
		for ctx.Err() == nil {
			t0 := time.Now()
			resp, err := hc.Get(base + "/v1/health")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil && ctx.Err() == nil {
				st.failures++
			}
			lat = append(lat, time.Since(t0))
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		slices.Sort(lat)
		st.probes = len(lat)
		if len(lat) > 0 {
			st.p50, st.p99, st.maxDelay = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
		}
		h.done <- st
	}()
	return h
}

func (h *soakHealth) wait() soakHealthStats { return <-h.done }

func (s soakHealthStats) log(t *testing.T) {
	t.Helper()
	t.Logf("  GET /v1/health: %d probes, %d failed, p50 %v, p99 %v, max %v",
		s.probes, s.failures, s.p50.Round(10*time.Microsecond), s.p99.Round(10*time.Microsecond), s.maxDelay.Round(10*time.Microsecond))
}

// soakSample is the process's memory and goroutines at one moment.
type soakSample struct {
	at         time.Duration
	heap       uint64 // HeapInuse just after a collection: live objects and their spans
	rss        int64  // VmRSS in bytes; -1 where /proc is not
	goroutines int
}

type soakSampler struct {
	stopc   chan struct{}
	done    chan []soakSample
	started time.Time
}

func startSoakSampler(every time.Duration) *soakSampler {
	s := &soakSampler{stopc: make(chan struct{}), done: make(chan []soakSample, 1), started: time.Now()}
	go func() {
		var out []soakSample
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			out = append(out, s.sample())
			select {
			case <-s.stopc:
				s.done <- out
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *soakSampler) sample() soakSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return soakSample{at: time.Since(s.started), heap: ms.HeapInuse, rss: soakRSS(), goroutines: runtime.NumGoroutine()}
}

func (s *soakSampler) stop() soakMemory {
	close(s.stopc)
	return soakMemory(<-s.done)
}

// soakRSS reads this process's resident set from /proc, or -1.
func soakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// soakMemory is a run's samples.
type soakMemory []soakSample

// thirds splits the samples after warm-up (the first fifth) into three.
func (m soakMemory) thirds() (first, middle, last soakMemory) {
	s := m[len(m)/5:]
	n := len(s) / 3
	return s[:n], s[n : len(s)-n], s[len(s)-n:]
}

func (m soakMemory) peak(f func(soakSample) int64) int64 {
	var p int64
	for _, s := range m {
		p = max(p, f(s))
	}
	return p
}

func soakHeapOf(s soakSample) int64 { return int64(s.heap) }
func soakRSSOf(s soakSample) int64  { return s.rss }

func (m soakMemory) peakGoroutines() int {
	return int(m.peak(func(s soakSample) int64 { return int64(s.goroutines) }))
}

func (m soakMemory) log(t *testing.T) {
	t.Helper()
	if len(m) < 6 {
		t.Logf("  memory: %d samples, too few to compare", len(m))
		return
	}
	first, mid, last := m.thirds()
	mb := func(v int64) string {
		if v < 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
	}
	t.Logf("  live heap peak by third after warm-up: %s, %s, %s (start %s); RSS peak: %s, %s, %s (start %s); %d samples",
		mb(first.peak(soakHeapOf)), mb(mid.peak(soakHeapOf)), mb(last.peak(soakHeapOf)), mb(soakHeapOf(m[0])),
		mb(first.peak(soakRSSOf)), mb(mid.peak(soakRSSOf)), mb(last.peak(soakRSSOf)), mb(m[0].rss), len(m))
}

// checkFlat requires the last third's live heap peak to be within a quarter,
// plus slack, of the first third's: memory that grows with time under a
// steady load fails it, a working set that is merely large does not.
func (m soakMemory) checkFlat(t *testing.T, slack int64) {
	t.Helper()
	if len(m) < 6 {
		t.Errorf("only %d memory samples", len(m))
		return
	}
	first, _, last := m.thirds()
	a, b := first.peak(soakHeapOf), last.peak(soakHeapOf)
	if b > a+a/4+slack {
		t.Errorf("live heap grew: peak %.1f MiB in the first third after warm-up, %.1f MiB in the last",
			float64(a)/(1<<20), float64(b)/(1<<20))
	}
}

// soakSettledGoroutines is the goroutine count once the node is idle: the
// smallest of a few readings, as background work (a flush, a compaction)
// comes and goes.
func soakSettledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 10 {
		time.Sleep(50 * time.Millisecond)
		n = min(n, runtime.NumGoroutine())
	}
	return n
}

// soakGoroutineSlack is how many goroutines above the baseline still count as
// back: Pebble's flushes and compactions, and timers of the HTTP stack, come
// and go on their own.
const soakGoroutineSlack = 10

// soakWaitGoroutines waits up to 30 s for the goroutines to return to
// baseline (plus slack) and returns the count; past that it fails the test
// with the goroutines that remain.
func soakWaitGoroutines(t *testing.T, baseline int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline+soakGoroutineSlack {
			return n
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Errorf("%d goroutines 30 s after the load, %d before it:\n%.20000s", n, baseline, b.String())
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The hostile soak.
const (
	// soakBigResultChars control characters escape to 6 bytes each in JSON, so
	// a result of 174,000 of them makes a complete body and an event of about
	// 1 MiB, under the body limit (as civnode bench --hostile does).
	soakBigResultChars = 174000
	soakReaders        = 8    // clients reading full pages to the end
	soakSlowReaders    = 4    // clients reading 4 KiB every 100 ms
	soakStalled        = 4    // clients that send a request and never read
	soakConns          = 2000 // connections each asking for health every 2 s
	// soakConnAddrs is how many loopback addresses the connections come
	// from: as many hosts would, each under the node's cap per address
	// (--max-conns-per-addr, 1024 by default).
	soakConnAddrs = 4
)

// TestSoakHostile fills the chain with events of about 1 MiB and then, for
// the soak's length, reads them in full pages (GET /v1/events?limit=1000) from
// soakReaders clients, slowly from soakSlowReaders, not at all from
// soakStalled raw connections that send their request and never read, while
// soakConns more connections each ask for GET /v1/health every 2 s and a probe
// times health every 20 ms. Every health request must succeed and every
// connection must be accepted (the cap is above soakConns), the live heap
// must stay within a bound set by the clients' pages and connections and be
// flat, and the goroutines must come back once the clients go.
func TestSoakHostile(t *testing.T) {
	d, full := soakLength(t)
	soakRaiseFiles(t, 2*soakConns+1024)
	n := startNode(t, t.TempDir())
	c := newSoakClient(n.url, n.token, soakReaders+soakSlowReaders)
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c.mustBootstrap(t, "soak-pub", "broker")
	c.mustBootstrap(t, "soak-big", "enforcer")
	// A page ends at the node's 4 MiB budget, so a dozen events fill
	// several; the full form reads a chain of 200 MiB.
	big := 12
	if full {
		big = 200
	}
	result, err := json.Marshal(map[string]string{"result": strings.Repeat("\x01", soakBigResultChars)})
	if err != nil {
		t.Fatal(err)
	}
	for range big {
		id, err := c.createClaim(ctx, "soak-big")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.call(ctx, http.MethodPost, "/v1/core/missions/"+id+"/complete", result, http.StatusOK); err != nil {
			t.Fatal(err)
		}
	}
	baseline := soakSettledGoroutines()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	load, stopLoad := context.WithTimeout(ctx, d)
	defer stopLoad()
	samples := startSoakSampler(soakEvery(d))
	var errs soakErrors
	var pages, pageBytes, slowCut, healthAsked, busy atomic.Int64
	var wg sync.WaitGroup
	const page = "/v1/events?type=mission.completed&limit=1000"
	for range soakReaders {
		wg.Go(func() {
			for load.Err() == nil {
				n, err := soakReadPage(load, c, page)
				if errors.Is(err, errSoakBusy) {
					busy.Add(1)
					soakPause(load, time.Second) // as Retry-After asks
					continue
				}
				if err != nil {
					errs.add(load, "full page", err)
					continue
				}
				pages.Add(1)
				pageBytes.Add(n)
			}
		})
	}
	for range soakSlowReaders {
		wg.Go(func() {
			for load.Err() == nil {
				if err := soakSlowRead(load, c, page); err != nil && load.Err() == nil {
					// The node ends a response its client takes too long to
					// read (the response write timeout): expected, counted.
					slowCut.Add(1)
				}
			}
		})
	}
	addr := strings.TrimPrefix(n.url, "http://")
	for range soakStalled {
		wg.Go(func() { soakStall(load, addr, n.token, page) })
	}
	var refused atomic.Int64
	conns := make(chan struct{}, soakConns)
	for i := range soakConns {
		wg.Go(func() {
			if err := soakHealthConn(load, addr, i, conns, &healthAsked); err != nil && load.Err() == nil {
				refused.Add(1)
				errs.add(load, "health connection", err)
			}
		})
	}
	health := startSoakHealth(load, c.base, 20*time.Millisecond)
	// How many of the connections were open at once, counted when the last
	// one has asked its first question (or the load ended first).
	open := 0
	for open < soakConns && load.Err() == nil {
		select {
		case <-conns:
			open++
		case <-load.Done():
		}
	}
	wg.Wait()
	hs := health.wait()
	mem := samples.stop()
	soakHeapProfile(t, "hostile")
	c.close()
	after := soakWaitGoroutines(t, baseline)

	t.Logf("soak hostile: %v with %d events of %d bytes each (%s)", d, big, len(result),
		map[bool]string{true: "full form", false: "short form"}[full])
	t.Logf("  full pages read %d (%.1f MiB/s), answered 503 busy %d, slow reads cut by the node %d, connections open at once %d of %d, health requests on them %d",
		pages.Load(), float64(pageBytes.Load())/(1<<20)/d.Seconds(), busy.Load(), slowCut.Load(), open, soakConns, healthAsked.Load())
	hs.log(t)
	mem.log(t)
	t.Logf("  goroutines: %d before the load, %d at its peak, %d after", baseline, mem.peakGoroutines(), after)
	errs.check(t)
	if pages.Load() == 0 {
		t.Errorf("no full page was read in %v (%d answered busy): the budget starved the readers", d, busy.Load())
	}
	if open < soakConns {
		t.Errorf("only %d of %d connections were open at once", open, soakConns)
	}
	if hs.failures > 0 {
		t.Errorf("%d health probes failed", hs.failures)
	}
	if full && hs.p99 > soakHealthP99 {
		t.Errorf("health p99 %v, want under %v", hs.p99, soakHealthP99)
	}
	// Each client holds at most one page the node has built (the page budget
	// plus the one event that may pass it), doubled for the encoding and the
	// copy in flight; each connection its buffers.
	const pageMax = 4<<20 + 1<<20
	bound := int64(before.HeapInuse) + 2*(soakReaders+soakSlowReaders+soakStalled)*pageMax + soakConns*(64<<10)
	if peak := mem.peak(soakHeapOf); peak > bound {
		t.Errorf("live heap peaked at %.1f MiB, over the bound of %.1f MiB", float64(peak)/(1<<20), float64(bound)/(1<<20))
	}
	t.Logf("  live heap before the load %.1f MiB, bound %.1f MiB", float64(before.HeapInuse)/(1<<20), float64(bound)/(1<<20))
	mem.checkFlat(t, 32<<20)
}

// soakReadPage reads one page to its end as it arrives, keeping none of it,
// so that the heap measured is the node's.
func soakReadPage(ctx context.Context, c *soakClient, path string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "1" &&
			bytes.Contains(b, []byte(`"code":"busy"`)) {
			return 0, errSoakBusy
		}
		return 0, fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, b)
	}
	return io.Copy(io.Discard, resp.Body)
}

// errSoakBusy is a page the node's response budget refused: the stalled and
// slow clients hold pages until the write deadline, and a reader past the
// budget is answered 503 busy by design (docs/limits.md). It is counted, not
// failed.
var errSoakBusy = errors.New("503 busy")

// soakSlowRead reads one page 4 KiB at a time, 100 ms apart.
func soakSlowRead(ctx context.Context, c *soakClient, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := make([]byte, 4<<10)
	for ctx.Err() == nil {
		if _, err := resp.Body.Read(buf); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		soakPause(ctx, 100*time.Millisecond)
	}
	return nil
}

// soakStall sends a request on a raw connection and never reads the answer,
// opening a new one whenever 40 s have passed (the node has given up on
// writing to it by then).
func soakStall(ctx context.Context, addr, token, path string) {
	for ctx.Err() == nil {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			soakPause(ctx, time.Second)
			continue
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", path, addr, token)
		soakPause(ctx, 40*time.Second)
		conn.Close()
	}
}

// soakHealthConn keeps one connection open for the whole load and asks
// GET /v1/health on it every 2 s, starting at a point of the first 2 s set by
// i. It signals open once its first answer is in.
func soakHealthConn(ctx context.Context, addr string, i int, open chan<- struct{}, asked *atomic.Int64) error {
	soakPause(ctx, time.Duration(i)*2*time.Second/soakConns)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%soakConnAddrs))}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	r := bufio.NewReader(conn)
	req := "GET /v1/health HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	for first := true; ctx.Err() == nil; first = false {
		if _, err := io.WriteString(conn, req); err != nil {
			return soakConnErr(ctx, err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return soakConnErr(ctx, err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return soakConnErr(ctx, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health on a held connection: status %d", resp.StatusCode)
		}
		asked.Add(1)
		if first {
			open <- struct{}{}
		}
		soakPause(ctx, 2*time.Second)
	}
	return nil
}

// soakConnErr is err unless it is the deadline the end of the load set.
func soakConnErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("held connection timed out: %w", err)
	}
	return err
}

// soakProfileEnv names a directory where each soak test writes a heap
// profile of the process as its load ends (soak-<test>.heap), for go tool
// pprof when memory is not flat.
const soakProfileEnv = "CIVNODE_SOAK_PROFILE"

func soakHeapProfile(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv(soakProfileEnv)
	if dir == "" {
		return
	}
	runtime.GC()
	path := filepath.Join(dir, "soak-"+name+".heap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("  heap profile: %s", path)
}

// soakRaiseFiles makes sure this process may open want descriptors: the
// client and the node's side of each connection are both in it. Go raises
// the soft limit to the hard one at start on Linux; this covers the rest.
func soakRaiseFiles(t *testing.T, want uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur >= want {
		return
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < want {
		t.Fatalf("open files: limit %d (hard %d), the soak needs %d: %v", lim.Cur, lim.Max, want, err)
	}
}
