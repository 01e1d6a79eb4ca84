package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

var statePairs = flag.Int("state.pairs", 5, "BenchmarkHTTPCreateStateCommitments: alternated pairs of runs (commitments on and off, the first side alternating)")

// BenchmarkHTTPCreateStateCommitments is the cost of the state commitments
// (docs/state-proofs.md) to writes: 64 clients create missions over real HTTP
// on a new node with its log on disk, alternately with the state map on (the
// folds record each create's changes and a committer runs a round every
// second as serve's does: the tree brought to the durable seq, state.committed
// appended, the tree written) and off (core.Config.NoState, no committer),
// b.N creates a run, -state.pairs pairs; odd pairs run on first, even pairs
// off first, so that whatever the first run of a pair pays (the heap's
// growth, the previous node's files) falls on each side alike. It reports
// each side's median req/s and CPU a create (the whole process, clients
// included), the median of the pairs' ratios, the commitment's lag (a
// create's 200 to the end of the first round whose state.committed covers
// it) and, beside them, one core's Ed25519 signing rate measured idle
// before the load.
//
//	go test ./http -run '^$' -bench HTTPCreateStateCommitments -benchtime 20000x -state.pairs 5 -timeout 30m
func BenchmarkHTTPCreateStateCommitments(b *testing.B) {
	signs := benchSignRate()
	body := benchMissionBody(b)
	var ratios, onRates, offRates, onCPU, offCPU, lags, rounds []float64
	pairs := *statePairs
	if b.N == 1 {
		// The framework's first call only sizes b.N.
		pairs = 1
	}
	for pair := range pairs {
		var on, off stateLoad
		order := []bool{true, false}
		if pair%2 == 1 {
			order = []bool{false, true}
		}
		for _, state := range order {
			ld := runStateLoad(b, body, b.N, state)
			if state {
				on = ld
			} else {
				off = ld
			}
		}
		r := on.rate / off.rate
		ratios = append(ratios, r)
		onRates, offRates = append(onRates, on.rate), append(offRates, off.rate)
		onCPU, offCPU = append(onCPU, on.cpuUS), append(offCPU, off.cpuUS)
		lags = append(lags, on.lags...)
		rounds = append(rounds, on.roundMS...)
		b.Logf("pair %d: on %.0f req/s %.0f cpu_us/op p99 %.1f ms; off %.0f req/s %.0f cpu_us/op p99 %.1f ms; ratio %.3f; lag p50 %.0f p99 %.0f ms over %d rounds",
			pair+1, on.rate, on.cpuUS, on.p99, off.rate, off.cpuUS, off.p99, r, quantile(on.lags, 0.5), quantile(on.lags, 0.99), len(on.roundMS))
	}
	b.ReportMetric(median(onRates), "on_req/s")
	b.ReportMetric(median(offRates), "off_req/s")
	b.ReportMetric(median(onCPU), "on_cpu_us/op")
	b.ReportMetric(median(offCPU), "off_cpu_us/op")
	b.ReportMetric(median(ratios), "x_on/off")
	b.ReportMetric(quantile(lags, 0.5), "lag_p50_ms")
	b.ReportMetric(quantile(lags, 0.99), "lag_p99_ms")
	b.ReportMetric(quantile(rounds, 0.5), "round_p50_ms")
	b.ReportMetric(signs, "signs/s")
}

// stateLoad is one run of BenchmarkHTTPCreateStateCommitments.
type stateLoad struct {
	rate, cpuUS, p99 float64
	// lags are each create's commitment lag, roundMS each round's time, in
	// ms; both empty with the state off.
	lags, roundMS []float64
}

func runStateLoad(b *testing.B, body []byte, n int, state bool) stateLoad {
	b.Helper()
	const clients = 64
	c, err := core.Open(eventlog.Options{Dir: b.TempDir(), Key: ed25519.NewKeyFromSeed(testSeed), Logger: discardLogger()},
		core.Config{NoState: !state})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	srv := httptest.NewServer(New(wired(Options{OwnerToken: testToken, Logger: discardLogger()}, c)))
	defer srv.Close()
	transport := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	post := func() (string, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/core/missions", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, raw)
		}
		var rec struct {
			MissionID string `json:"mission_id"`
		}
		if err == nil {
			err = json.Unmarshal(raw, &rec)
		}
		return rec.MissionID, err
	}
	for range clients {
		if _, err := post(); err != nil {
			b.Fatal(err)
		}
	}
	from := c.Log.Tip().Seq + 1

	ctx, cancel := context.WithCancel(context.Background())
	committer := &benchCommitter{log: c.Log}
	var committerDone sync.WaitGroup
	defer func() { cancel(); committerDone.Wait() }()
	if state {
		committerDone.Go(func() { committer.run(ctx, b) })
	}

	type done struct {
		id string
		at time.Time
	}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	acks := make([][]done, clients)
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), processCPU()
	for cl := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				id, err := post()
				if err != nil {
					b.Error(err)
					return
				}
				t1 := time.Now()
				lat[cl] = append(lat[cl], t1.Sub(t0))
				acks[cl] = append(acks[cl], done{id, t1})
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		cancel()
		committerDone.Wait()
		b.Fatal("no create answered")
	}
	ld := stateLoad{rate: float64(len(all)) / elapsed.Seconds(), cpuUS: float64(cpu.Microseconds()) / float64(len(all)),
		p99: float64(all[int(0.99*float64(len(all)-1))].Microseconds()) / 1000}
	if !state {
		cancel()
		return ld
	}
	// Let the committer cover the last create, then match each create's 200
	// with the first round that covered its event.
	tip := c.Log.Tip().Seq
	seqOf := make(map[string]uint64, n)
	if err := c.Log.Scan(from, tip, func(ev *eventlog.Event) error {
		if ev.Type != events.TypeMissionCreated {
			return nil
		}
		var p struct {
			MissionID string `json:"mission_id"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return err
		}
		seqOf[p.MissionID] = ev.Seq
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var last uint64
	for _, seq := range seqOf {
		last = max(last, seq)
	}
	for deadline := time.Now().Add(30 * time.Second); committer.through() < last && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	committerDone.Wait()
	commits := committer.done()
	for _, d := range slices.Concat(acks...) {
		seq, ok := seqOf[d.id]
		if !ok {
			b.Fatalf("mission %s: no mission.created in seqs %d..%d", d.id, from, tip)
		}
		i := sort.Search(len(commits), func(i int) bool { return commits[i].through >= seq })
		if i == len(commits) {
			b.Fatalf("mission %s at seq %d: no commitment covers it", d.id, seq)
		}
		ld.lags = append(ld.lags, float64(commits[i].at.Sub(d.at).Microseconds())/1000)
	}
	for _, cm := range commits {
		ld.roundMS = append(ld.roundMS, cm.took.Seconds()*1000)
	}
	return ld
}

// benchCommitter runs serve's state commitment round
// (projections.CommitState, signed without witnesses) every second and
// records when each round that signed a root ended.
type benchCommitter struct {
	log     *eventlog.Log
	mu      sync.Mutex
	commits []benchCommit
}

type benchCommit struct {
	through uint64
	at      time.Time
	took    time.Duration
}

func (c *benchCommitter) run(ctx context.Context, b *testing.B) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.round(ctx); err != nil && ctx.Err() == nil {
			b.Error(err)
			return
		}
	}
}

func (c *benchCommitter) round(ctx context.Context) error {
	t0 := time.Now()
	signed := false
	commit, _, err := projections.CommitState(c.log, func(s projections.StateCommit) (uint64, error) {
		evs, err := c.log.Append(ctx, eventlog.Draft{Type: events.TypeStateCommitted, Payload: events.StateCommitted{
			ThroughSeq: s.ThroughSeq, StateRoot: s.Root.String(), Entries: s.Entries}})
		if err != nil {
			return 0, err
		}
		signed = true
		return evs[0].Seq, nil
	})
	if err != nil || !signed {
		return err
	}
	end := time.Now()
	c.mu.Lock()
	c.commits = append(c.commits, benchCommit{through: commit.ThroughSeq, at: end, took: end.Sub(t0)})
	c.mu.Unlock()
	return nil
}

func (c *benchCommitter) through() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.commits) == 0 {
		return 0
	}
	return c.commits[len(c.commits)-1].through
}

func (c *benchCommitter) done() []benchCommit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.commits)
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the q-quantile of xs (nearest rank), 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
