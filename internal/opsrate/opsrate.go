package opsrate

import (
	"slices"
	"sync"
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

// MedianParallel runs op on workers goroutines at once, in seven bursts of 500
// calls each, and returns the median burst's calls per second, all workers
// together: the rate of every core when workers is GOMAXPROCS.
func MedianParallel(workers int, op func()) float64 {
	const bursts, n = 7, 500
	rates := make([]float64, bursts)
	for i := range rates {
		var wg sync.WaitGroup
		start := time.Now()
		for range workers {
			wg.Go(func() {
				for range n {
					op()
				}
			})
		}
		wg.Wait()
		rates[i] = float64(workers*n) / time.Since(start).Seconds()
	}
	slices.Sort(rates)
	return rates[bursts/2]
}
