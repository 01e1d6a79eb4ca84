package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/internal/loglevel"
)

// Config is one run of the harness.
type Config struct {
	// Events is the number of missions created before the timed phases.
	Events int
	// Duration is the length of each timed phase.
	Duration time.Duration
	// Node, when set, is the URL of a running node on loopback to load
	// instead of starting one, with its owner token in Token or TokenFile.
	Node      string
	Token     string
	TokenFile string
	// TLS is the client side of an https:// Node (its RootCAs: bench
	// --ca-file); nil: Go's defaults.
	TLS *tls.Config
	// Binary is the civnode executable that runs serve and verify; "" is
	// this executable.
	Binary string
	// Hostile adds the hostile phase, each reader level of which lasts
	// HostileDuration.
	Hostile         bool
	HostileDuration time.Duration
	// TmpDir is the parent of the temporary data dirs; "" is $TMPDIR.
	TmpDir string
	// StreamOnly runs only the stream phase, after the sign and
	// synced-write limits and the fill.
	StreamOnly bool
	// Peers are the systems measured beside the node's 64-client creates,
	// PeerRounds rounds alternating with them, PeerPuts writes a round:
	// "etcd" is the one there is (peer_etcd.go).
	Peers      []string
	PeerRounds int
	PeerPuts   int

	// Logger gets the progress of the phases.
	Logger *slog.Logger
	// Progress, if set, draws a bar for a long phase: it returns the
	// callback for the count reached (nil for no bar) and a function that
	// removes the bar.
	Progress func(desc string, total int64) (func(n uint64), func())
}

// Concurrency of the phases, fixed so that runs compare (the performance
// targets are stated for these).
const (
	writers = 64 // concurrent creating clients, appenders and HTTP-limit connections
	readers = 16 // concurrent GET /v1/events readers
)

// Check checks cfg as the command line gives it, and normalises Node to
// scheme://host:port. Its errors name the flags.
func (cfg *Config) Check() error {
	switch {
	case cfg.Events < 0:
		return errors.New("--events must be 0 or more")
	case cfg.Duration <= 0 || cfg.Duration > 10*time.Minute:
		return errors.New("--duration must be more than 0 and at most 10m")
	case cfg.HostileDuration <= 0 || cfg.HostileDuration > 10*time.Minute:
		return errors.New("--hostile-duration must be more than 0 and at most 10m")
	case cfg.Node == "" && (cfg.Token != "" || cfg.TokenFile != ""):
		return errors.New("--token and --token-file go with --node")
	case cfg.Token != "" && cfg.TokenFile != "":
		return errors.New("give --token or --token-file, not both")
	case cfg.Node != "" && cfg.Token == "" && cfg.TokenFile == "":
		return errors.New("--node needs the node's owner token: --token or --token-file")
	}
	if err := cfg.checkPeers(); err != nil {
		return err
	}
	if cfg.Node != "" {
		u, err := url.Parse(cfg.Node)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--node %q: want http://HOST:PORT or https://HOST:PORT", cfg.Node)
		}
		if !isLoopback(u.Hostname()) {
			return fmt.Errorf("--node %q: bench loads loopback addresses only", cfg.Node)
		}
		cfg.Node = strings.TrimRight(u.Scheme+"://"+u.Host, "/")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// harness is one run.
type harness struct {
	cfg    Config
	log    *slog.Logger
	quiet  *slog.Logger // for components whose info messages would drown the progress
	tmp    string
	res    *Results
	target *target
	node   *node  // nil with Config.Node
	body   []byte // the mission create body every client sends
}

// Run runs the phases cfg asks for and returns their figures. When the node
// bench started cannot be stopped after a complete run, Run returns the
// figures with the error: they were measured, and the failure is reported
// beside them. On any other error the figures are nil.
func Run(ctx context.Context, cfg Config) (res *Results, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string, int64) (func(uint64), func()) { return nil, func() {} }
	}
	b := &harness{cfg: cfg, log: cfg.Logger, res: newResults(cfg), body: missionBody()}
	b.quiet = slog.New(loglevel.Floor(cfg.Logger.Handler(), slog.LevelWarn))
	if b.cfg.Binary == "" && b.cfg.Node == "" {
		if b.cfg.Binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the civnode binary (pass --binary): %w", err)
		}
	}
	if b.tmp, err = os.MkdirTemp(cfg.TmpDir, "civnode-bench-"); err != nil {
		return nil, fmt.Errorf("create temporary dir: %w", err)
	}
	defer os.RemoveAll(b.tmp)
	defer func() {
		if b.node != nil { // an error path; the run itself stops the node
			b.node.shutdown(10 * time.Second)
		}
	}()

	b.res.set("cpus", float64(runtime.NumCPU()))
	if cfg.StreamOnly {
		if err := b.streamOnly(ctx); err != nil {
			return nil, err
		}
		return b.res, nil
	}
	if err := b.referenceLimits(ctx); err != nil {
		return nil, err
	}
	if err := b.appendRate(ctx); err != nil {
		return nil, err
	}
	if err := b.startTarget(ctx); err != nil {
		return nil, err
	}
	if err := b.fill(ctx); err != nil {
		return nil, err
	}
	if err := b.createRates(ctx); err != nil {
		return nil, err
	}
	if err := b.stateCommitments(ctx); err != nil {
		return nil, err
	}
	if err := b.peerPhase(ctx); err != nil {
		return nil, err
	}
	if b.node != nil {
		if err := b.verifyAndRestart(ctx); err != nil {
			return nil, err
		}
	}
	if err := b.readers(ctx); err != nil {
		return nil, err
	}
	if err := b.streamDelivery(ctx); err != nil {
		return nil, err
	}
	if cfg.Hostile {
		if err := b.hostilePhase(ctx); err != nil {
			return nil, err
		}
	}
	if b.node != nil {
		b.log.Info("bench: stopping the node (SIGTERM)")
		err := b.node.stop()
		b.node = nil
		if err != nil {
			return b.res, fmt.Errorf("stop the node after the run: %w", err)
		}
	}
	return b.res, nil
}

// signAndSyncLimits measures, idle, the Ed25519 sign and verify rates over an
// event the node signs and the latency of one synced Pebble write: the limits
// every phase is read against.
func (b *harness) signAndSyncLimits() error {
	b.log.Info("bench: reference limits (idle)")
	msg, err := eventMessage(b.quiet)
	if err != nil {
		return fmt.Errorf("an event to sign: %w", err)
	}
	sign, signCores, verify := edRates(msg)
	b.res.set("sign_per_s", sign)
	b.res.set("sign_cores_per_s", signCores)
	b.res.set("verify_per_s", verify)
	syncMs, err := syncWriteMillis(b.tmp, b.quiet)
	if err != nil {
		return err
	}
	b.res.set("pebble_sync_write_ms", syncMs)
	b.res.set("pebble_sync_writes_per_s", 1000/syncMs)
	return nil
}

// referenceLimits measures the machine before anything else runs.
func (b *harness) referenceLimits(ctx context.Context) error {
	if err := b.signAndSyncLimits(); err != nil {
		return err
	}
	for _, signed := range []bool{false, true} {
		r, err := httpLimit(ctx, writers, b.cfg.Duration, b.body, signed)
		if err != nil {
			return fmt.Errorf("bare HTTP limit: %w", err)
		}
		if signed {
			b.res.set("http_limit_signed_per_s", r)
		} else {
			b.res.set("http_limit_per_s", r)
		}
	}
	b.log.Info("bench: reference limits", logkey.SignPerS, int(b.res.get("sign_per_s")), logkey.SignCoresPerS, int(b.res.get("sign_cores_per_s")), logkey.VerifyPerS, int(b.res.get("verify_per_s")),
		logkey.PebbleSyncWriteMS, round3(b.res.get("pebble_sync_write_ms")), logkey.HTTPLimitPerS, int(b.res.get("http_limit_per_s")),
		logkey.HTTPLimitSignedPerS, int(b.res.get("http_limit_signed_per_s")))
	return nil
}

// appendRate appends mission.created-shaped events to a fresh log on disk from
// 64 goroutines, with fsync on: the log's figure without HTTP.
func (b *harness) appendRate(ctx context.Context) error {
	b.log.Info("bench: append", logkey.Callers, writers, logkey.Duration, b.cfg.Duration)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	dir := filepath.Join(b.tmp, "append")
	l, err := eventlog.Open(eventlog.Options{Dir: dir, Key: key, Logger: b.quiet})
	if err != nil {
		return fmt.Errorf("open event log: %w", err)
	}
	// The payload is encoded as the node's commands encode a mission.created
	// (commands/mission_draft.go): eventlog.Canonicalize, on the caller's
	// goroutine, inside the timed call. Handed the struct, Append would
	// encode it with encoding/json and parse that again, a path no create
	// takes.
	op := func(ctx context.Context, w int) (int, error) {
		payload, err := eventlog.Canonicalize(createdPayload(w))
		if err != nil {
			return 0, err
		}
		_, err = l.Append(ctx, eventlog.Draft{Type: events.TypeMissionCreated, Payload: payload})
		return 1, err
	}
	res, err := runLoad(ctx, writers, b.cfg.Duration, 0, op, nil)
	if cerr := l.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close event log: %w", cerr)
	}
	os.RemoveAll(dir)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	b.res.set("append_per_s", res.opsPerSecond())
	b.log.Info("bench: append", logkey.AppendPerS, int(res.opsPerSecond()))
	return nil
}

// startTarget starts the node, or checks the --node one answers.
func (b *harness) startTarget(ctx context.Context) error {
	if b.cfg.Node != "" {
		tok := b.cfg.Token
		if b.cfg.TokenFile != "" {
			t, err := datadir.LoadControlToken(b.cfg.TokenFile, b.log)
			if err != nil {
				return fmt.Errorf("--token-file: %w", err)
			}
			tok = t
		}
		b.target = &target{base: b.cfg.Node, token: tok}
		c := b.loadClient(1, 10*time.Second)
		defer closeClient(c)
		var st struct{}
		if err := b.target.call(ctx, c, http.MethodGet, "/v1/state", nil, &st); err != nil {
			return fmt.Errorf("reach --node: %w", err)
		}
		return nil
	}
	b.log.Info("bench: starting the node", logkey.Binary, b.cfg.Binary)
	n, err := startNode(ctx, b.cfg.Binary, filepath.Join(b.tmp, "node"))
	if err != nil {
		return err
	}
	b.node, b.target = n, n.target()
	return nil
}

// fill creates --events missions with 64 clients before the timed phases, so that
// they run against a chain of that length.
func (b *harness) fill(ctx context.Context) error {
	if b.cfg.Events == 0 {
		return nil
	}
	b.log.Info("bench: filling the node", logkey.Missions, b.cfg.Events, logkey.Clients, writers)
	c := b.loadClient(writers, 30*time.Second)
	defer closeClient(c)
	bufs := newBuffers(writers)
	progress, done := b.cfg.Progress("fill", int64(b.cfg.Events))
	// The rate over the first and the last tenth of the fill: the same
	// clients on the same machine minutes apart, on a new node and at
	// --events, which says whether an append grows dearer with history
	// better than two runs an hour apart do.
	n := int64(b.cfg.Events)
	tenth := max(n/10, 1)
	start := time.Now()
	var firstEnd, lastStart atomic.Int64 // since start
	onDone := func(k int64) {
		switch k {
		case tenth:
			firstEnd.Store(int64(time.Since(start)))
		case n - tenth:
			lastStart.Store(int64(time.Since(start)))
		}
		if progress != nil {
			progress(uint64(k))
		}
	}
	// Bounded in time too: 2 minutes, plus 2 ms a mission (≥ 500/s).
	bound := 2*time.Minute + time.Duration(b.cfg.Events)*2*time.Millisecond
	res, err := runLoad(ctx, writers, bound, n, b.createOp(c, bufs), onDone)
	end := time.Since(start)
	done()
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	b.res.set("fill_per_s", res.opsPerSecond())
	if res.ops == n && n >= 2*tenth && firstEnd.Load() > 0 && end > time.Duration(lastStart.Load()) {
		b.res.set("fill_first_per_s", rate(tenth, time.Duration(firstEnd.Load())))
		b.res.set("fill_last_per_s", rate(tenth, end-time.Duration(lastStart.Load())))
	}
	b.log.Info("bench: filled", logkey.Missions, res.ops, logkey.PerS, int(res.opsPerSecond()))
	return nil
}

func (b *harness) createOp(c *http.Client, bufs buffers) loadOp {
	return func(ctx context.Context, w int) (int, error) {
		return 1, b.target.do(ctx, c, http.MethodPost, "/v1/core/missions", b.body, http.StatusOK, bufs.of(w))
	}
}

// createRates times POST /v1/core/missions from one client, then from 64.
func (b *harness) createRates(ctx context.Context) error {
	for _, clients := range []int{1, writers} {
		b.log.Info("bench: POST /v1/core/missions", logkey.Clients, clients, logkey.Duration, b.cfg.Duration)
		c := b.loadClient(clients, 30*time.Second)
		bufs := newBuffers(clients)
		op := b.createOp(c, bufs)
		_, err := runLoad(ctx, clients, time.Minute, int64(clients), op, nil) // open the connections
		var res loadResult
		var cpu0, cpu1 time.Duration
		cpuErr := err
		if err == nil {
			cpu0, cpuErr = b.nodeCPU()
			res, err = runLoad(ctx, clients, b.cfg.Duration, 0, op, nil)
			if cpuErr == nil {
				cpu1, cpuErr = b.nodeCPU()
			}
		}
		closeClient(c)
		if err != nil {
			return fmt.Errorf("create missions: %w", err)
		}
		if clients == 1 {
			b.res.set("http_create_seq_per_s", res.opsPerSecond())
			b.res.set("http_create_seq_p50_ms", res.quantile(0.50))
		} else {
			b.res.set("http_create_c64_per_s", res.opsPerSecond())
			b.res.set("http_create_c64_p99_ms", res.quantile(0.99))
			if b.node != nil && cpuErr == nil && res.ops > 0 {
				// The node's own CPU per create, the load generator's not
				// counted: less moved than the rate by what else runs on
				// the machine.
				b.res.set("http_create_c64_node_cpu_us", float64((cpu1-cpu0).Microseconds())/float64(res.ops))
			}
		}
		b.log.Info("bench: POST /v1/core/missions", logkey.Clients, clients, logkey.PerS, int(res.opsPerSecond()),
			logkey.P50MS, round3(res.quantile(0.5)), logkey.P99MS, round3(res.quantile(0.99)))
	}
	c := b.loadClient(1, 30*time.Second)
	defer closeClient(c)
	var st struct {
		Chain struct {
			Seq uint64 `json:"seq"`
		} `json:"chain"`
	}
	if err := b.target.call(ctx, c, http.MethodGet, "/v1/state", nil, &st); err != nil {
		return err
	}
	b.res.set("chain_events", float64(st.Chain.Seq))
	return nil
}

// verifyAndRestart stops the node with SIGTERM, verifies its chain with civnode
// verify --data-dir, and starts it again on the same dir, timing the start.
func (b *harness) verifyAndRestart(ctx context.Context) error {
	b.log.Info("bench: stopping the node (SIGTERM)")
	err := b.node.stop()
	dir := b.node.dir
	b.node = nil
	if err != nil {
		return err
	}
	b.log.Info("bench: civnode verify --data-dir")
	events, elapsed, err := verifyChain(ctx, b.cfg.Binary, dir)
	if err != nil {
		return err
	}
	b.res.set("verify_chain_per_s", rate(int64(events), elapsed))
	b.log.Info("bench: verified", logkey.Events, events, logkey.Seconds, round3(elapsed.Seconds()))

	b.log.Info("bench: restarting the node")
	n, err := startNode(ctx, b.cfg.Binary, dir)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	b.node, b.target = n, n.target()
	b.res.set("restart_s", n.ready.Seconds())
	rss, _, err := n.memory()
	if err != nil {
		return err
	}
	b.res.set("rss_after_restart_mb", rss)
	b.log.Info("bench: restarted", logkey.RestartS, round3(n.ready.Seconds()), logkey.RSSMB, round3(rss))
	return nil
}

// readers runs 16 readers of GET /v1/events?since=…&limit=100 from random points
// of the chain, and samples the node's RSS meanwhile.
func (b *harness) readers(ctx context.Context) error {
	c := b.loadClient(readers, 30*time.Second)
	defer closeClient(c)
	since, err := b.sampleSince(ctx, c)
	if err != nil {
		return err
	}
	b.log.Info("bench: GET /v1/events?since=&limit=100", logkey.Readers, readers, logkey.StartPoints, len(since), logkey.Duration, b.cfg.Duration)
	bufs := newBuffers(readers)
	checked := make([]bool, readers)
	op := func(ctx context.Context, w int) (int, error) {
		ts := since[mrand.IntN(len(since))]
		buf := bufs.of(w)
		if err := b.target.do(ctx, c, http.MethodGet, "/v1/events?limit=100&since="+url.QueryEscape(ts), nil, http.StatusOK, buf); err != nil {
			return 0, err
		}
		n := countEvents(buf.Bytes())
		if !checked[w] { // the first answer of each reader is decoded in full
			checked[w] = true
			var page struct {
				Events []json.RawMessage `json:"events"`
			}
			if err := json.Unmarshal(buf.Bytes(), &page); err != nil {
				return 0, fmt.Errorf("GET /v1/events: decode answer: %w", err)
			}
			if len(page.Events) != n {
				return 0, fmt.Errorf("GET /v1/events: counted %d events in an answer of %d", n, len(page.Events))
			}
		}
		return n, nil
	}
	if _, err := runLoad(ctx, readers, time.Minute, readers, op, nil); err != nil { // open the connections
		return err
	}
	var stopRSS func() float64
	if b.node != nil {
		stopRSS = b.node.watchRSS(100 * time.Millisecond)
	}
	res, err := runLoad(ctx, readers, b.cfg.Duration, 0, op, nil)
	if stopRSS != nil {
		b.res.set("rss_under_readers_mb", stopRSS())
	}
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	b.res.set("events_since_c16_per_s", res.itemsPerSecond())
	b.res.set("events_since_c16_p99_ms", res.quantile(0.99))
	if b.node != nil {
		_, hwm, err := b.node.memory()
		if err != nil {
			return err
		}
		// Linux updates VmHWM lazily (when memory is unmapped, not as RSS
		// grows), so a sampled VmRSS can exceed it.
		b.res.set("rss_peak_mb", max(hwm, b.res.get("rss_under_readers_mb")))
	}
	b.log.Info("bench: read events", logkey.EventsPerS, int(res.itemsPerSecond()), logkey.RequestsPerS, int(res.opsPerSecond()),
		logkey.P99MS, round3(res.quantile(0.99)))
	return nil
}

// sampleSince picks start points for the readers: timestamps of real events,
// found by asking for the first event after a random time between genesis and
// now, and kept when at least a full page of 100 events follows them.
func (b *harness) sampleSince(ctx context.Context, c *http.Client) ([]string, error) {
	type page struct {
		Events []struct {
			Timestamp string `json:"timestamp"`
		} `json:"events"`
		Total uint64 `json:"total"`
	}
	var first page
	if err := b.target.call(ctx, c, http.MethodGet, "/v1/events?limit=1", nil, &first); err != nil {
		return nil, err
	}
	if len(first.Events) == 0 {
		return nil, fmt.Errorf("GET /v1/events: the chain is empty")
	}
	t0, err := time.Parse(time.RFC3339Nano, first.Events[0].Timestamp)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/events: timestamp %q: %w", first.Events[0].Timestamp, err)
	}
	span := time.Since(t0)
	const want, attempts = 256, 1024
	var out []string
	for i := 0; i < attempts && len(out) < want && span > 0; i++ {
		t := t0.Add(time.Duration(mrand.Int64N(int64(span)))).UTC().Format(time.RFC3339Nano)
		var p page
		if err := b.target.call(ctx, c, http.MethodGet, "/v1/events?limit=1&since="+url.QueryEscape(t), nil, &p); err != nil {
			return nil, err
		}
		if len(p.Events) == 1 && p.Total >= 101 {
			out = append(out, p.Events[0].Timestamp)
		}
	}
	if len(out) == 0 { // a chain shorter than two pages: read it from its start
		out = append(out, first.Events[0].Timestamp)
	}
	return out, nil
}

// countEvents counts the events of a GET /v1/events answer by the one key every
// served event ends with, which is much cheaper for the bench, on the node's
// cores, than decoding 100 events.
func countEvents(body []byte) int {
	return bytes.Count(body, []byte(`","signature":"`))
}

// missionBody is a typical subnet mission of about 500 bytes, published by
// the owner as the governance actor of genesis (serve's default --governs).
func missionBody() []byte {
	return []byte(`{"title":"Escort the ore convoy",` +
		`"description":"Escort the ore convoy from the north dock to the refinery and report any raid on the way.",` +
		`"publisher":"genesis","publisher_kind":"planetary_government","domain":"security","subnet_id":"genesis",` +
		`"zone_id":"north-dock","required_role":"enforcer","required_faction":"order",` +
		`"reward":{"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5},` +
		`"payload":{"escorts":2,"route":["north-dock","refinery"]}}`)
}

// createdPayload is a mission.created payload as the mission commands
// append it, from worker.
func createdPayload(worker int) events.MissionCreated {
	zone, role, faction := "north-dock", "enforcer", "order"
	return events.MissionCreated{
		MissionID: fmt.Sprintf("019b0000-0000-7000-8000-%012x", mrand.Uint64()&0xffffffffffff),
		Title:     "Escort the ore convoy", Description: "Escort the ore convoy from the north dock to the refinery.",
		Publisher: "genesis", PublisherKind: "planetary_government", IssuerDID: "did:key:z6MkgMWt3ZTN97sQXRQDjXWTqFWN2K7GVyADfdBuZe5tAPR8",
		Domain: "security", SubnetID: "genesis", ZoneID: &zone, RequiredRole: &role, RequiredFaction: &faction,
		Reward:  events.Reward{AgentCredit: 25, Reputation: 3, Capacity: 1, TreasuryShareCredit: 5},
		Payload: json.RawMessage(fmt.Sprintf(`{"escorts":2,"route":["north-dock","refinery"],"worker":%d}`, worker)),
	}
}

func round3(v float64) float64 {
	return float64(int64(v*1000+0.5)) / 1000
}
