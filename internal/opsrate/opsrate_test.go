package opsrate

import (
	"sync/atomic"
	"testing"
)

// TestMedianCountsCalls: op runs in seven bursts of 500 calls, and the rate
// is a positive, finite figure.
func TestMedianCountsCalls(t *testing.T) {
	calls := 0
	r := Median(func() { calls++ })
	if calls != 7*500 {
		t.Errorf("op ran %d times, want %d", calls, 7*500)
	}
	if !(r > 0) || r != r || r > 1e308 {
		t.Errorf("rate %v, want a positive finite figure", r)
	}
}

// TestMedianParallelCountsCalls: op runs on every worker in seven bursts of
// 500 calls each, and the rate is a positive, finite figure.
func TestMedianParallelCountsCalls(t *testing.T) {
	var calls atomic.Int64
	r := MedianParallel(3, func() { calls.Add(1) })
	if n := calls.Load(); n != 3*7*500 {
		t.Errorf("op ran %d times, want %d", n, 3*7*500)
	}
	if !(r > 0) || r != r || r > 1e308 {
		t.Errorf("rate %v, want a positive finite figure", r)
	}
}
