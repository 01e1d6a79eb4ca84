package opsrate

import (
	"slices"
	"time"
)

// Median runs op in seven bursts of 500 calls and returns the median burst's
// calls per second.
func Median(op func()) float64 {
	const bursts, n = 7, 500
	rates := make([]float64, bursts)
	for i := range rates {
		start := time.Now()
		for range n {
			op()
		}
		rates[i] = n / time.Since(start).Seconds()
	}
	slices.Sort(rates)
	return rates[bursts/2]
}
