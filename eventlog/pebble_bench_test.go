package eventlog_test

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
)

var (
	pebbleConfigs = flag.String("pebble.configs", "",
		"BenchmarkPebbleOptions: the candidates to compare (eventlog.PebbleCandidates; a+b applies both), base first; none: the benchmark is skipped")
	pebblePrefill = flag.Int("pebble.prefill", 300000, "BenchmarkPebbleOptions: missions in the store before a round")
	pebbleAppends = flag.Int("pebble.appends", 150000, "BenchmarkPebbleOptions: missions created per round and candidate")
	pebbleRounds  = flag.Int("pebble.rounds", 3, "BenchmarkPebbleOptions: rounds; each runs every candidate once, in turn")
	pebbleStore   = flag.String("pebble.store", "", "BenchmarkPebbleOptions: where the prefilled store is kept between runs; default under os.TempDir")
)

// BenchmarkPebbleOptions compares Pebble's options for the log's real load:
// mission creates through the commands, with the read models folded into
// each event's batch, from 64 callers, fsync on, on a store that already
// holds -pebble.prefill missions. The prefilled store is built once and
// kept (-pebble.store); every round copies it for each candidate in turn, so
// that the candidates alternate on a shared machine. It logs a table of the
// medians and reports them, per candidate, as metrics. It takes many
// minutes, so it runs only when -pebble.configs names the candidates; the
// log's options against schema 1's L0 threshold, over a million creates on
// a million-event store:
//
//	go test ./eventlog -run '^$' -bench PebbleOptions -benchtime 1x -timeout 90m \
//	    -pebble.configs base,l0x8 -pebble.prefill 1000000 -pebble.appends 1000000 -pebble.rounds 1
//
// creates/s is the rate over the round; cpu_µs/create the process's user
// and system CPU (signing, folds, commit and Pebble's background work) per
// create; and the bytes are what Pebble wrote per create: the WAL, the
// flushes, and the compactions, the cost that grows with history.
func BenchmarkPebbleOptions(b *testing.B) {
	if *pebbleConfigs == "" {
		b.Skip("-pebble.configs names no candidates")
	}
	names := strings.Split(*pebbleConfigs, ",")
	for _, n := range names {
		for _, part := range strings.Split(n, "+") {
			if eventlog.PebbleCandidates[part] == nil {
				b.Fatalf("no Pebble candidate %q", part)
			}
		}
	}
	src := *pebbleStore
	if src == "" {
		src = filepath.Join(os.TempDir(), fmt.Sprintf("civnode-pebble-prefill-%d", *pebblePrefill))
	}
	if _, err := os.Stat(filepath.Join(src, "done")); err != nil {
		b.Logf("prefilling %s with %d missions", src, *pebblePrefill)
		os.RemoveAll(src)
		start := time.Now()
		if _, err := pebbleRound(filepath.Join(src, "db"), "base", *pebblePrefill, 0); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "done"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("prefilled in %s", time.Since(start).Round(time.Second))
	}
	results := map[string][]roundFigures{}
	for round := range *pebbleRounds {
		for _, n := range names {
			dir := filepath.Join(b.TempDir(), n)
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(src, "db"))); err != nil {
				b.Fatal(err)
			}
			f, err := pebbleRound(dir, n, *pebbleAppends, 2000)
			if err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(dir)
			// Now, not at the end as b.Logf would: a full run takes many minutes.
			fmt.Fprintf(os.Stderr, "round %d %-9s %s\n", round+1, n, f)
			results[n] = append(results[n], f)
		}
	}
	base := medianFigures(results[names[0]])
	b.Logf("medians of %d rounds, at %d+ missions, ratios to %s:", *pebbleRounds, *pebblePrefill, names[0])
	for _, n := range names {
		m := medianFigures(results[n])
		b.Logf("%-9s %s  rate %.2f× cpu %.2f× compacted %.2f× owed %.2f×", n, m,
			m.rate/base.rate, m.cpu/base.cpu, m.compacted/base.compacted, m.owed/base.owed)
		b.ReportMetric(m.rate, n+"_creates/s")
		b.ReportMetric(m.cpu, n+"_cpu_µs/create")
		b.ReportMetric(m.compacted, n+"_compacted_B/create")
		b.ReportMetric(m.owed, n+"_owed_B/create")
		b.ReportMetric(m.getUs, n+"_get_µs")
		b.ReportMetric(m.scanUs, n+"_scan_µs")
	}
}

type roundFigures struct {
	rate, cpu               float64 // creates/s, CPU µs per create
	wal, flushed, compacted float64 // bytes per create
	compactions             float64
	readAmp                 float64
	// owed is compacted plus the growth of Pebble's estimated compaction
	// debt over the round, per create: a candidate that only defers
	// compactions past the round's end does not look cheaper for it.
	owed    float64
	debtMiB float64
	// getUs and scanUs are the medians of ProbeReads at the round's end, in
	// µs: what the L0 sublevels left at that moment cost a reader.
	getUs, scanUs float64
}

func (f roundFigures) String() string {
	return fmt.Sprintf("%6.0f creates/s %5.0f cpu_µs/create  wal %4.0f B flushed %5.0f B compacted %6.0f B owed %6.0f B /create  %3.0f compactions  read_amp %2.0f  debt %4.0f MiB  get %5.1f µs scan %6.1f µs",
		f.rate, f.cpu, f.wal, f.flushed, f.compacted, f.owed, f.compactions, f.readAmp, f.debtMiB, f.getUs, f.scanUs)
}

func medianFigures(rs []roundFigures) roundFigures {
	med := func(get func(roundFigures) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return roundFigures{
		rate: med(func(r roundFigures) float64 { return r.rate }), cpu: med(func(r roundFigures) float64 { return r.cpu }),
		wal: med(func(r roundFigures) float64 { return r.wal }), flushed: med(func(r roundFigures) float64 { return r.flushed }),
		compacted:   med(func(r roundFigures) float64 { return r.compacted }),
		compactions: med(func(r roundFigures) float64 { return r.compactions }),
		readAmp:     med(func(r roundFigures) float64 { return r.readAmp }),
		debtMiB:     med(func(r roundFigures) float64 { return r.debtMiB }),
		owed:        med(func(r roundFigures) float64 { return r.owed }),
		getUs:       med(func(r roundFigures) float64 { return r.getUs }),
		scanUs:      med(func(r roundFigures) float64 { return r.scanUs }),
	}
}

// pebbleRound opens the store in dir with the candidate's options, creates warm missions
// untimed, then n more from 64 callers, and closes it.
func pebbleRound(dir, candidate string, n, warm int) (roundFigures, error) {
	restore := eventlog.WithPebble(candidate)
	c, err := core.Open(eventlog.Options{Dir: dir, Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
		Logger: slog.New(slog.DiscardHandler)}, core.Config{})
	restore() // Open has taken the options
	if err != nil {
		return roundFigures{}, err
	}
	defer c.Close()
	create := createMissions(c)
	if err := create(warm); err != nil {
		return roundFigures{}, err
	}
	before, cpu0, start := eventlog.StoreMetrics(c.Log), cpuTime(), time.Now()
	if err := create(n); err != nil {
		return roundFigures{}, err
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	after := eventlog.StoreMetrics(c.Log)
	get, scan, err := eventlog.ProbeReads(c.Log, 2000)
	if err != nil {
		return roundFigures{}, err
	}
	per := func(a, b uint64) float64 { return float64(a-b) / float64(n) }
	return roundFigures{
		rate: float64(n) / elapsed.Seconds(), cpu: float64(cpu.Microseconds()) / float64(n),
		wal: per(after.WALBytes, before.WALBytes), flushed: per(after.Flushed, before.Flushed),
		compacted: per(after.Compacted, before.Compacted), compactions: float64(after.Compactions - before.Compactions),
		readAmp: float64(after.ReadAmp), debtMiB: float64(after.Debt) / (1 << 20),
		owed:  (float64(after.Compacted-before.Compacted) + float64(after.Debt) - float64(before.Debt)) / float64(n),
		getUs: float64(get.Nanoseconds()) / 1e3, scanUs: float64(scan.Nanoseconds()) / 1e3,
	}, nil
}

// createMissions returns a function that creates n missions from 64 callers.
func createMissions(c *core.Core) func(n int) error {
	owner := commands.Actor{Kind: commands.ActorOwner, TokenID: "owner", Governs: []string{"genesis"}}
	v := func(n int64) *int64 { return &n }
	return func(n int) error {
		var next atomic.Int64
		errs := make(chan error, 64)
		for range 64 {
			go func() {
				for next.Add(1) <= int64(n) {
					_, err := c.Mission.Create(context.Background(), owner, commands.CreateMissionInput{Title: "Survey the belt",
						Description: strings.Repeat("Survey the outer belt and report. ", 8), Publisher: "genesis",
						PublisherKind: "planetary_government", Domain: "research", SubnetID: "genesis",
						Reward: &commands.RewardInput{AgentCredit: v(10), Reputation: v(2), Capacity: v(1), TreasuryShareCredit: v(4)}})
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		var first error
		for range 64 {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
