package localnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
	"github.com/civnode/civnode/transparency"
)

// BenchmarkPublishLag measures the recovery point of continuous publishing
// (serve --publish-dir, the default interval): for each of b.N writes by 64
// writers, the time from its acknowledgement (Append returned, durable) to
// the end of the first publish run whose tiles and bundles hold it, durable
// in the directory. It reports the lag's p50 and p99 and how long a publish
// run took, beside the machine's floor: half an interval (p50) and a whole
// one (p99) for a write arriving at a random moment, plus the time the
// machine takes to write and fsync one file and its directory (fsync_ms).
// Run it with a count of writes that spans many intervals:
//
//	go test ./cmd/civnode/internal/localnode -run '^$' -bench PublishLag -benchtime 100000x
func BenchmarkPublishLag(b *testing.B) {
	const writers = 64
	pub := filepath.Join(b.TempDir(), "pub")
	var mu sync.Mutex
	type run struct {
		size          int64
		started, done time.Time
	}
	var runs []run
	cfg := Config{
		Dir: datadir.Dir(filepath.Join(b.TempDir(), "node")), Addr: "127.0.0.1:0", Catalog: catalog.Default(),
		Logger:    slog.New(slog.DiscardHandler),
		Listening: func(string) error { return nil },
		Notify:    func(string) error { return nil },
	}
	cfg.Publish = Publishing{Target: pub, OnPublished: func(p transparency.Published, started, ended time.Time) {
		mu.Lock()
		runs = append(runs, run{p.Tiles.Size, started, ended})
		mu.Unlock()
	}}
	ctx := context.Background()
	n, err := OpenNode(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	chain := n.core.Log
	type ack struct {
		seq uint64
		at  time.Time
	}
	acks := make([][]ack, writers)
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				evs, err := chain.Append(ctx, eventlog.Draft{Type: "bench.publish", Payload: map[string]any{"writer": w, "i": i}})
				if err != nil {
					b.Error(err)
					return
				}
				acks[w] = append(acks[w], ack{evs[0].Seq, time.Now()})
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	tip := chain.TreeSize()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		last := int64(0)
		if len(runs) > 0 {
			last = runs[len(runs)-1].size
		}
		mu.Unlock()
		if last >= tip {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("published %d of %d events after 30s", last, tip)
		}
		time.Sleep(10 * time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	var lags []time.Duration
	for _, as := range acks {
		for _, a := range as {
			// The first run that ended after the acknowledgement and holds
			// the write (runs are in order, their sizes never fall).
			i, _ := slices.BinarySearchFunc(runs, a, func(r run, a ack) int {
				if r.size < int64(a.seq) || r.done.Before(a.at) {
					return -1
				}
				return 1
			})
			if i == len(runs) {
				b.Fatalf("no publish holds seq %d", a.seq)
			}
			lags = append(lags, runs[i].done.Sub(a.at))
		}
	}
	var took []time.Duration
	for _, r := range runs {
		took = append(took, r.done.Sub(r.started))
	}
	slices.Sort(lags)
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	interval := DefaultPublishInterval
	b.ReportMetric(ms(lags[len(lags)/2]), "lag_p50_ms")
	b.ReportMetric(ms(lags[len(lags)*99/100]), "lag_p99_ms")
	b.ReportMetric(ms(took[len(took)/2]), "publish_p50_ms")
	b.ReportMetric(ms(interval/2), "floor_p50_ms")
	b.ReportMetric(ms(interval), "floor_p99_ms")
	b.ReportMetric(ms(fsyncTime(b, filepath.Join(b.TempDir(), "fsync"))), "fsync_ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(0, "ns/op")
}

// fsyncTime is the median time, over 20 tries, to write a 8 KiB file
// durably (atomicfile.Replace: write, fsync, rename) and fsync its
// directory: the machine's floor for one durable publish step.
func fsyncTime(b *testing.B, dir string) time.Duration {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 8<<10)
	var ts []time.Duration
	for i := range 20 {
		start := time.Now()
		if err := atomicfile.Replace(filepath.Join(dir, fmt.Sprint("f", i)), dir, data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := atomicfile.SyncDir(dir); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, time.Since(start))
	}
	slices.Sort(ts)
	return ts[len(ts)/2]
}
