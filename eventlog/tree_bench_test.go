package eventlog

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// treeBenchEvents is the chain size of the tree benchmarks: a million by
// default, an ordinary size for a node that has run a while;
// CIVNODE_TREE_BENCH_EVENTS overrides it for a quick run.
func treeBenchEvents(b *testing.B) int64 {
	if v := os.Getenv("CIVNODE_TREE_BENCH_EVENTS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 2 {
			b.Fatalf("CIVNODE_TREE_BENCH_EVENTS=%q", v)
		}
		return n
	}
	return 1_000_000
}

// openTreeBenchLog fills a log on disk with n events, appended in groups of
// 1,000 drafts as a busy node's group commits would, and reopens it so the
// proofs read from the store, not from caches the appends warmed.
func openTreeBenchLog(b *testing.B, n int64) *Log {
	b.Helper()
	dir, key := b.TempDir(), seedKey(b, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		b.Fatal(err)
	}
	for l.Tip().Seq < uint64(n) {
		k := min(1000, n-int64(l.Tip().Seq))
		drafts := make([]Draft, k)
		for i := range drafts {
			drafts[i] = benchPayload(i)
		}
		if _, err := l.Append(context.Background(), drafts...); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	l, err = Open(Options{Dir: dir, Key: key})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// BenchmarkProveInclusion times inclusion proofs of random events in a tree
// of a million events (docs/benchmarks.md: p99 under 2 ms), beside the machine's own
// limit measured first on the idle store: the median time of one stored-hash
// read times the hashes a proof reads. x_limit is the p50 over that bound.
func BenchmarkProveInclusion(b *testing.B) {
	n := treeBenchEvents(b)
	l := openTreeBenchLog(b, n)
	rng := rand.New(rand.NewPCG(7, 7))

	// The limit: random single stored-hash reads, idle, before the load.
	reads := make([]time.Duration, 2000)
	r := l.treeReader()
	for i := range reads {
		idx := tlog.StoredHashIndex(0, rng.Int64N(n))
		start := time.Now()
		if _, err := r.ReadHashes([]int64{idx}); err != nil {
			b.Fatal(err)
		}
		reads[i] = time.Since(start)
	}
	slices.Sort(reads)
	perRead := reads[len(reads)/2]
	proof, err := l.ProveInclusion(uint64(n/3), n)
	if err != nil {
		b.Fatal(err)
	}
	limit := time.Duration(len(proof)) * perRead

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		seq := 1 + uint64(rng.Int64N(n))
		start := time.Now()
		if _, err := l.ProveInclusion(seq, n); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(float64(n), "events")
	b.ReportMetric(float64(q(0.5).Microseconds()), "p50_µs")
	b.ReportMetric(float64(q(0.99).Microseconds()), "p99_µs")
	b.ReportMetric(float64(len(proof)), "hashes/proof")
	b.ReportMetric(float64(perRead.Nanoseconds()), "read_ns")
	b.ReportMetric(float64(q(0.5))/float64(limit), "x_limit")
}
