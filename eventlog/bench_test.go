package eventlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/opsrate"
)

// The machine's own limits, measured in the same run as the figures they qualify.

// signRate is single-core Ed25519 signatures per second over an event-sized
// message: the median of seven bursts, so one preempted burst on a shared machine
// does not set the figure.
func signRate(key ed25519.PrivateKey) float64 {
	msg := bytes.Repeat([]byte("x"), 300)
	return opsrate.Median(func() { ed25519.Sign(key, msg) })
}

// verifyRate is single-core Ed25519 verifications per second, measured likewise.
func verifyRate(key ed25519.PrivateKey) float64 {
	msg := bytes.Repeat([]byte("x"), 300)
	sig := ed25519.Sign(key, msg)
	pub := key.Public().(ed25519.PublicKey)
	return opsrate.Median(func() { ed25519.Verify(pub, msg, sig) })
}

func BenchmarkEd25519Sign(b *testing.B) {
	key := seedKey(b, vectorSeed)
	msg := bytes.Repeat([]byte("x"), 300)
	for b.Loop() {
		ed25519.Sign(key, msg)
	}
}

func BenchmarkEd25519Verify(b *testing.B) {
	key := seedKey(b, vectorSeed)
	msg := bytes.Repeat([]byte("x"), 300)
	sig := ed25519.Sign(key, msg)
	pub := key.Public().(ed25519.PublicKey)
	for b.Loop() {
		ed25519.Verify(pub, msg, sig)
	}
}

// benchMission is shaped like a mission.created payload; commands encode typed
// structs like it, not maps.
type benchMission struct {
	MissionID     string         `json:"mission_id"`
	Title         string         `json:"title"`
	Publisher     string         `json:"publisher"`
	PublisherKind string         `json:"publisher_kind"`
	Domain        string         `json:"domain"`
	SubnetID      string         `json:"subnet_id"`
	RequiredRole  string         `json:"required_role"`
	Reward        map[string]int `json:"reward"`
}

func benchPayload(i int) Draft {
	return Draft{Type: "mission.created", Payload: benchMission{
		MissionID: fmt.Sprintf("019b0000-0000-7000-8000-%012d", i), Title: "Escort the convoy",
		Publisher: "genesis", PublisherKind: "planetary_government", Domain: "security",
		SubnetID: "genesis", RequiredRole: "enforcer",
		Reward: map[string]int{"agent_credit": 25, "reputation": 3, "capacity": 1, "treasury_share_credit": 5},
	}}
}

// BenchmarkAppend measures durable appends (fsync on, on disk) with many concurrent
// callers sharing group commits, and reports them beside the single-core Ed25519
// signing rate measured in the same run: x_sign_rate is appends/s ÷ signs/s.
func BenchmarkAppend(b *testing.B) {
	for _, callers := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			benchAppends(b, Options{}, callers)
		})
	}
}

// benchAppends opens a log on disk with opts and times b.N appends from
// callers concurrent callers, reporting appends/s beside the single-core
// signing rate measured after them on the idle process.
func benchAppends(b *testing.B, opts Options, callers int) {
	key := seedKey(b, vectorSeed)
	opts.Dir, opts.Key = b.TempDir(), key
	l, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	work := make(chan int, callers)
	done := make(chan struct{})
	for range callers {
		go func() {
			for i := range work {
				if _, err := l.Append(context.Background(), benchPayload(i)); err != nil {
					b.Error(err)
				}
			}
			done <- struct{}{}
		}()
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		work <- i
	}
	close(work)
	for range callers {
		<-done
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	sign := signRate(key)
	b.ReportMetric(rate, "appends/s")
	b.ReportMetric(sign, "signs/s")
	b.ReportMetric(rate/sign, "x_sign_rate")
}

// BenchmarkVerify walks a 20,000-event chain on disk (Log.Verify), an export
// bundle of it (VerifyBundle), and the chain again into an empty log
// (ImportChain, as civnode verify --data-dir derives state commitments),
// beside the single-core Ed25519 verify rate.
func BenchmarkVerify(b *testing.B) {
	const events = 20000
	key := seedKey(b, vectorSeed)
	l, err := Open(Options{Dir: b.TempDir(), Key: key})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < events; i += 500 {
		drafts := make([]Draft, 500)
		for k := range drafts {
			drafts[k] = benchPayload(i + k)
		}
		if _, err := l.Append(context.Background(), drafts...); err != nil {
			b.Fatal(err)
		}
	}
	var bundle bytes.Buffer
	if _, err := l.WriteBundle(context.Background(), &bundle, BundleHeader{}, nil); err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B, elapsed time.Duration) {
		rate := float64(b.N) * float64(l.Tip().Seq) / elapsed.Seconds()
		vr := verifyRate(key)
		b.ReportMetric(rate, "events/s")
		b.ReportMetric(vr, "verifies/s")
		b.ReportMetric(rate/vr, "x_verify_rate")
	}
	b.Run("local", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			if _, err := l.Verify(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, time.Since(start))
	})
	b.Run("bundle", func(b *testing.B) {
		b.SetBytes(int64(bundle.Len()))
		start := time.Now()
		for b.Loop() {
			if _, err := VerifyBundle(context.Background(), bytes.NewReader(bundle.Bytes()), nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, time.Since(start))
	})
	b.Run("import", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			dst, err := Open(Options{Dir: b.TempDir(), PublicKey: key.Public().(ed25519.PublicKey), Ingest: true, Models: &counter{version: "1"}})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if _, err := dst.ImportChain(context.Background(), l, nil); err != nil {
				b.Fatal(err)
			}
			elapsed += time.Since(start)
			b.StopTimer()
			if err := dst.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		report(b, elapsed)
	})
}

// BenchmarkPebbleSyncWrite is the storage limit: one small synced Pebble write, as
// a lone caller sees it (no group commit).
func BenchmarkPebbleSyncWrite(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir(), Key: seedKey(b, vectorSeed)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; b.Loop(); i++ {
		if err := l.PutRecord("bench", fmt.Sprint(i%64), []byte("x")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendTree prices the Merkle tree: durable appends from 64
// callers with and without it, in the same run. Compare the two appends/s
// medians (benchstat); the design allows the tree 5%.
func BenchmarkAppendTree(b *testing.B) {
	for _, tree := range []bool{false, true} {
		name := "tree=off"
		if tree {
			name = "tree=on"
		}
		b.Run(name, func(b *testing.B) {
			defer withTree(tree)()
			benchAppends(b, Options{}, 64)
		})
	}
}
