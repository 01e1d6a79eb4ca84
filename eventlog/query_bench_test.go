package eventlog

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// queryBenchLog builds an on-disk log of n mission-shaped events, alternating
// mission.created and mission.completed, appended in large batches, and returns
// it with every event's timestamp.
func queryBenchLog(b *testing.B, n int) (*Log, []time.Time) {
	b.Helper()
	l, err := Open(Options{Dir: b.TempDir(), Key: seedKey(b, vectorSeed)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	const batch = 2000
	for i := 0; i < n; i += batch {
		drafts := make([]Draft, min(batch, n-i))
		for k := range drafts {
			drafts[k] = benchPayload(i + k)
			if (i+k)%2 == 1 {
				drafts[k].Type = "mission.completed"
			}
		}
		if _, err := l.Append(context.Background(), drafts...); err != nil {
			b.Fatal(err)
		}
	}
	times := make([]time.Time, 0, n+1)
	err = l.Scan(1, l.Tip().Seq, func(ev *Event) error {
		times = append(times, ev.Time())
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return l, times
}

// scanRate is the log's own read limit, measured before the load: events per
// second that one goroutine copies out of a plain sequential scan of the event
// key space (no index seek, no filter), as the median of seven bursts.
func scanRate(l *Log) float64 {
	const burst = 20000
	tip := l.Tip().Seq
	var out bytes.Buffer
	rates := make([]float64, 7)
	for i := range rates {
		from := uint64(1 + (i*burst)%max(1, int(tip)-burst))
		out.Reset()
		start := time.Now()
		n := 0
		l.scanRaw(context.Background(), from, from+burst-1, func(_ uint64, raw []byte) error {
			out.Write(raw)
			n++
			return nil
		})
		rates[i] = float64(n) / time.Since(start).Seconds()
	}
	slices.Sort(rates)
	return rates[len(rates)/2]
}

// BenchmarkQuerySince is the read path of GET /v1/events?since=…&limit=100 on a
// log of 200,000 events: 16 concurrent readers, each query from a random
// timestamp, each event copied into a page buffer as the server does. It reports
// events/s served and the p99 latency of one query, beside scan_events/s, one
// goroutine's plain sequential scan measured in the same run before the load;
// x_scan_rate is events/s ÷ scan_events/s (above 1 means the readers beat one
// core's plain scan).
func BenchmarkQuerySince(b *testing.B) {
	const events, readers, limit = 200000, 16, 100
	l, times := queryBenchLog(b, events)
	for _, typ := range []string{"", "mission.completed"} {
		name := "all"
		if typ != "" {
			name = "type"
		}
		b.Run(name, func(b *testing.B) {
			scan := scanRate(l)
			var mu sync.Mutex
			var lat []time.Duration
			var served int64
			// RunParallel runs parallelism × GOMAXPROCS goroutines.
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((readers + procs - 1) / procs)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
				var page bytes.Buffer
				var mine []time.Duration
				var n int64
				for pb.Next() {
					since := times[rng.IntN(len(times))]
					page.Reset()
					t0 := time.Now()
					_, err := l.QueryRaw(context.Background(), Query{Since: since, Type: typ, Limit: limit}, func(_ uint64, raw []byte) (bool, error) {
						if page.Len() > 0 {
							page.WriteByte(',')
						}
						page.Write(raw)
						n++
						return true, nil
					})
					mine = append(mine, time.Since(t0))
					if err != nil {
						b.Error(err)
						return
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				served += n
				mu.Unlock()
			})
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			rate := float64(served) / elapsed.Seconds()
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
			b.ReportMetric(scan, "scan_events/s")
			b.ReportMetric(rate/scan, "x_scan_rate")
		})
	}
}
