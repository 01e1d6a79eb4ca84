package http

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/opsrate"
)

// BenchmarkHTTPCreateMission publishes missions over real HTTP on loopback
// against a node wired as civnode serve wires it, with its log on disk and fsync
// on: every 200 is a durable, signed mission.created. It runs with 1 and with 64
// concurrent clients (keep-alive connections) and reports requests per second,
// the median and 99th percentile latency, and, beside them, this machine's
// single-core Ed25519 signing rate measured in the same run (signs/s), the limit
// the targets of docs/benchmarks.md are stated against. See docs/benchmarks.md.
func BenchmarkHTTPCreateMission(b *testing.B) {
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			url := benchNode(b)
			body := benchMissionBody(b)
			transport := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, DisableCompression: true}
			defer transport.CloseIdleConnections()
			client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
			post := func() error {
				req, err := http.NewRequest(http.MethodPost, url+"/v1/core/missions", bytes.NewReader(body))
				if err != nil {
					return err
				}
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return err
			}
			// Warm the connections and the server before timing.
			for range clients {
				if err := post(); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			lat := make([][]time.Duration, clients)
			var wg sync.WaitGroup
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU()
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if err := post(); err != nil {
							b.Error(err)
							return
						}
						lat[c] = append(lat[c], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), processCPU()-cpu0
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
			// The CPU of the whole process, clients included, per request.
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu_us/op")
			b.ReportMetric(q(0.50), "p50_ms")
			b.ReportMetric(q(0.99), "p99_ms")
			b.ReportMetric(benchSignRate(), "signs/s")
		})
	}
}

// benchNode serves a node wired by core.Open with its log in a temporary
// directory (fsync on).
func benchNode(b *testing.B) string {
	b.Helper()
	c, err := core.Open(eventlog.Options{Dir: b.TempDir(), Key: ed25519.NewKeyFromSeed(testSeed), Logger: discardLogger()}, core.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	srv := httptest.NewServer(New(wired(Options{OwnerToken: testToken, Logger: discardLogger()}, c)))
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchMissionBody is a typical mission: a subnet's, with a small payload.
func benchMissionBody(b *testing.B) []byte {
	b.Helper()
	raw, err := marshalJSON(missionBody(map[string]any{"publisher": "genesis", "publisher_kind": "planetary_government"}))
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// benchSignRate is the single-core Ed25519 signing rate over an event-sized
// message (opsrate: the median of seven bursts, so that a moment of
// contention on a shared machine does not set the reference).
func benchSignRate() float64 {
	key := ed25519.NewKeyFromSeed(testSeed)
	msg := bytes.Repeat([]byte("x"), 600)
	return opsrate.Median(func() { ed25519.Sign(key, msg) })
}

// BenchmarkCreateMission runs POST /v1/core/missions in process, without TCP:
// 64 goroutines call the server's handler (middleware, decode, command,
// append with fsync, response) on a node whose log is on disk. It runs on a
// new node and on one already holding 200,000 missions, created in process
// before the timer starts, so that the costs that grow with history (point
// reads of absent keys, compaction) show. It reports creates/s and, beside
// them, this machine's single-core Ed25519 signing rate in the same run.
func BenchmarkCreateMission(b *testing.B) {
	const callers = 64
	body := benchMissionBody(b)
	for _, missions := range []int{0, 200_000} {
		// One node per size for every run of the sub-benchmark (the
		// framework runs it more than once and cleans up after each run),
		// filled before the first.
		var srv *Server
		parent := b
		b.Run(fmt.Sprintf("missions=%d", missions), func(b *testing.B) {
			post := func() error {
				req := httptest.NewRequest(http.MethodPost, "/v1/core/missions", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
				}
				return nil
			}
			run := func(n int) {
				var next atomic.Int64
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						for next.Add(1) <= int64(n) {
							if err := post(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			if srv == nil {
				c, err := core.Open(eventlog.Options{Dir: parent.TempDir(), Key: ed25519.NewKeyFromSeed(testSeed), Logger: discardLogger()}, core.Config{})
				if err != nil {
					b.Fatal(err)
				}
				parent.Cleanup(func() { c.Close() })
				srv = New(wired(Options{OwnerToken: testToken, Logger: discardLogger()}, c))
				run(missions)
			}
			b.ResetTimer()
			start := time.Now()
			run(b.N)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
			b.ReportMetric(benchSignRate(), "signs/s")
		})
	}
}
