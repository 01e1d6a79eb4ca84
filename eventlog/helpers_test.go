package eventlog

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"sync"
	"testing"
	"time"
)

// vectorSeed is the seed of testdata/vectors/chain-v1.json.
const vectorSeed = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func seedKey(t testing.TB, seedHex string) ed25519.PrivateKey {
	t.Helper()
	return seedKeyNoT(seedHex)
}

func seedKeyNoT(seedHex string) ed25519.PrivateKey {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != ed25519.SeedSize {
		panic("bad test seed " + seedHex)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// stalledClock always reads the same instant, so the log's +1µs rule sets every
// timestamp after the first.
func stalledClock(at time.Time) func() time.Time { return func() time.Time { return at } }

// steppingClock advances by step on every reading.
func steppingClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	now := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(step)
		return now
	}
}

func openMem(t testing.TB, opts Options) *Log {
	t.Helper()
	opts.InMemory = true
	if opts.Key == nil {
		opts.Key = seedKey(t, vectorSeed)
	}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Log, drafts ...Draft) []Event {
	t.Helper()
	evs, err := l.Append(context.Background(), drafts...)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func draft(typ string, kv ...any) Draft {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return Draft{Type: typ, Payload: m}
}
