//go:build unix

package projections_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/opsrate"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/statemap"
)

// BenchmarkStateAtScale builds a log on disk holding a million missions
// (CIVNODE_STATE_BENCH_MISSIONS=N for another size; 20,000 under -short)
// with the state map on, committing the state tree every 100,000 missions,
// and measures what the tree costs there:
//
//   - prove: ProveState over a new view, as GET /v1/state/proof reads it, of
//     a random existing mission and of a random absent one in turn, 1,000
//     proofs an op, p50 and p99 of each; every proof is verified against
//     the root.
//   - round: b.N rounds, each after 10,000 more missions created (not timed),
//     of PrepareState and Commit: the committer's time and CPU a changed key.
//
// The build takes about a minute at a million on the project's machine; it
// reports the bytes of the tree's records ('t') and of the changes kept as
// entries' values ('p') per entry, the store's disk bytes, and the growth of the Go heap and of
// the process's RSS over the build (a new log, before, to the built one,
// after a GC), beside one core's Ed25519 signing rate measured idle first.
//
//	go test ./projections -run '^$' -bench StateAtScale -benchtime 3x -timeout 90m
func BenchmarkStateAtScale(b *testing.B) {
	signs := stateSignRate()
	n := 1_000_000
	if testing.Short() {
		n = 20_000
	}
	if s := os.Getenv("CIVNODE_STATE_BENCH_MISSIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("CIVNODE_STATE_BENCH_MISSIONS=%q: want a positive count", s)
		}
		n = v
	}
	runtime.GC()
	heap0, rss0 := stateHeap(), stateRSS()
	l, err := eventlog.Open(eventlog.Options{Dir: b.TempDir(), Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
		Models: projections.Folder{State: true}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	next := 0
	create := func(count int) {
		const batch = 1000
		for count > 0 {
			k := min(batch, count)
			drafts := make([]eventlog.Draft, 0, k)
			for range k {
				m := created(next, "genesis")
				drafts = append(drafts, eventlog.Draft{Type: events.TypeMissionCreated, Payload: m, Decoded: m})
				next++
			}
			if _, err := l.Append(context.Background(), drafts...); err != nil {
				b.Fatal(err)
			}
			count -= k
		}
	}
	round := func() *projections.StateRound {
		r, err := projections.PrepareState(l, l.Tip().Seq)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		if err := r.Commit(0); err != nil {
			b.Fatal(err)
		}
		return r
	}
	for next < n {
		create(min(100_000, n-next))
		round()
	}
	built := time.Since(start)
	runtime.GC()
	heap1, rss1 := stateHeap(), stateRSS()
	v, err := l.DerivedView()
	if err != nil {
		b.Fatal(err)
	}
	commit, err := projections.StateTreeCommit(v)
	if err != nil {
		b.Fatal(err)
	}
	treeB, changeB := stateSpace(b, v, 't'), stateSpace(b, v, 'p')
	v.Close()
	st, err := l.StoreStats()
	if err != nil {
		b.Fatal(err)
	}
	entries := float64(commit.Entries)
	b.Logf("%d missions, %d entries, built in %s; tree %d B, changes %d B; store on disk %d B; heap +%d B, RSS +%d B",
		n, commit.Entries, built.Round(time.Second), treeB, changeB, st.DiskBytes, int64(heap1)-int64(heap0), rss1-rss0)

	// A prove op is 1,000 proofs, so that -benchtime 3x runs three rounds
	// and 3,000 proofs.
	const proofsPerOp = 1000
	b.Run("prove", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		var present, absent []time.Duration
		b.ResetTimer()
		for i := range b.N * proofsPerOp {
			id := missionID(n + rng.IntN(n))
			if i%2 == 0 {
				id = missionID(rng.IntN(n))
			}
			key := projections.StateKey(projections.StateKindMission, id)
			t0 := time.Now()
			v, err := l.DerivedView()
			if err != nil {
				b.Fatal(err)
			}
			value, proof, err := projections.ProveState(l, v, key)
			v.Close()
			took := time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			if err := statemap.Verify(commit.Root, key, value, proof); err != nil {
				b.Fatalf("%s: %v", key, err)
			}
			if (value != nil) != (i%2 == 0) {
				b.Fatalf("%s: value %q", key, value)
			}
			if i%2 == 0 {
				present = append(present, took)
			} else {
				absent = append(absent, took)
			}
		}
		b.StopTimer()
		b.ReportMetric(stateQuantile(present, 0.5), "present_p50_us")
		b.ReportMetric(stateQuantile(present, 0.99), "present_p99_us")
		b.ReportMetric(stateQuantile(absent, 0.5), "absent_p50_us")
		b.ReportMetric(stateQuantile(absent, 0.99), "absent_p99_us")
		b.ReportMetric(float64(treeB)/entries, "tree_B/entry")
		b.ReportMetric(float64(changeB)/entries, "change_B/entry")
		b.ReportMetric(float64(st.DiskBytes)/float64(n), "disk_B/mission")
		b.ReportMetric(float64(int64(heap1)-int64(heap0))/entries*1e6, "heap_B/1M")
		b.ReportMetric(float64(rss1-rss0)/entries*1e6, "rss_B/1M")
		b.ReportMetric(built.Seconds(), "build_s")
		b.ReportMetric(signs, "signs/s")
	})

	b.Run("round", func(b *testing.B) {
		const changes = 10_000
		var wall, cpu time.Duration
		keys := 0
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			create(changes)
			b.StartTimer()
			t0, c0 := time.Now(), stateCPU()
			r := round()
			wall += time.Since(t0)
			cpu += stateCPU() - c0
			keys += r.Changes
		}
		b.StopTimer()
		b.ReportMetric(float64(keys)/float64(b.N), "changes/round")
		b.ReportMetric(float64(wall.Microseconds())/float64(keys), "us/change")
		b.ReportMetric(float64(cpu.Microseconds())/float64(keys), "cpu_us/change")
		b.ReportMetric(signs, "signs/s")
	})
}

// stateSpace sums the keys and values of the tree's derived keys under
// prefix p in v.
func stateSpace(b *testing.B, v *eventlog.ModelView, p byte) int {
	b.Helper()
	total := 0
	if err := v.Scan(eventlog.DerivedKey([]byte{p}), eventlog.DerivedKey([]byte{p + 1}), false, func(k, val []byte) (bool, error) {
		total += len(k) + len(val)
		return true, nil
	}); err != nil {
		b.Fatal(err)
	}
	return total
}

func stateQuantile(xs []time.Duration, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) / 1000
}

func stateHeap() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// stateRSS is the process's resident set in bytes (VmRSS), 0 where /proc
// does not say.
func stateRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(raw) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "VmRSS:" {
			kb, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// stateCPU is the CPU the process has used, user and system.
func stateCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stateSignRate is one core's Ed25519 signing rate over an event-sized
// message (opsrate: the median of seven bursts).
func stateSignRate() float64 {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := bytes.Repeat([]byte("x"), 600)
	return opsrate.Median(func() { ed25519.Sign(key, msg) })
}
