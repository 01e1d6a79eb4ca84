package eventlog

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestBurstsNeverStall: bursts of concurrent appends of sizes up to 48, each
// followed by silence, all return: the last group of a burst is committed
// without waiting for a further request (runSequencer).
func TestBurstsNeverStall(t *testing.T) {
	l := openMem(t, Options{})
	for round := range 150 {
		n := 1 + (round*7)%48
		var wg sync.WaitGroup
		for w := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := l.Append(context.Background(), draft("test.burst", "round", round, "w", w)); err != nil {
					t.Error(err)
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: %d concurrent appends still waiting after 20 s", round, n)
		}
	}
	if _, err := l.Verify(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
