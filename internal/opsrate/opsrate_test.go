package opsrate

import "testing"

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
