package localnode

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// memChain is an in-memory log of key holding n events.
func memChain(t *testing.T, key ed25519.PrivateKey, n int) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range n {
		if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.note", Payload: map[string]any{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// lockedBuffer is a log sink the publisher writes to while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestPublisherRefuses: a publisher whose target holds what its chain does
// not extend overwrites nothing. Another key's checkpoint stops it for good;
// a larger tree of its own key is the fork guard's news (ahead, with the
// target's size) and pauses it until the chain holds that tree, when it
// publishes on.
func TestPublisherRefuses(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	long := memChain(t, key, 20) // 21 events with the genesis

	start := func(chain *eventlog.Log, pub string, ahead func(string, int64)) (*publisher, *lockedBuffer, chan struct{}, context.CancelFunc) {
		logs := &lockedBuffer{}
		p, err := newPublisher(Publishing{Target: pub, Interval: 10 * time.Millisecond}, chain,
			transparency.LogSource(chain, "test"), false, slog.New(slog.NewTextHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		p.ahead = ahead
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.run(rctx)
		}()
		return p, logs, done, cancel
	}

	// Another key's checkpoint: stopped, nothing written.
	pub := filepath.Join(t.TempDir(), "pub")
	if _, err := transparency.Publish(ctx, transparency.LogSource(memChain(t, other, 3), "other"), pub, transparency.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile))
	p, logs, done, cancel := start(long, pub, nil)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the publisher did not stop on another key's checkpoint; log:\n%s", logs)
	}
	cancel()
	if after, _ := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile)); !bytes.Equal(before, after) {
		t.Fatal("another key's checkpoint was overwritten")
	}
	if !strings.Contains(logs.String(), "publishing stopped") {
		t.Fatalf("no error logged:\n%s", logs)
	}

	// A larger tree of the same key: ahead is told, nothing written, and
	// once the chain holds that tree (here: it grows to it) publishing
	// goes on.
	pub = filepath.Join(t.TempDir(), "pub")
	if _, err := transparency.Publish(ctx, transparency.LogSource(long, "long"), pub, transparency.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	published, _ := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile))
	short := memChain(t, key, 0)
	var mu sync.Mutex
	var told []int64
	p, logs, done, cancel = start(short, pub, func(where string, size int64) {
		mu.Lock()
		told = append(told, size)
		mu.Unlock()
	})
	defer cancel()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(told)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ahead was not told of the larger tree; log:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if told[0] != 21 {
		t.Fatalf("ahead told of %v, want 21", told)
	}
	mu.Unlock()
	if got := p.Ceiling(); got != 0 {
		t.Fatalf("the ceiling is %d while nothing was published", got)
	}
	// Paused, not stopped: once the chain holds as many events, it tries
	// again, finds another tree of that size (a fork) and stops for good.
	for range 21 {
		appendNote(t, short)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the publisher did not stop on a forked tree; log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "publishing paused") || !strings.Contains(logs.String(), "publishing stopped") {
		t.Fatalf("want a pause, then a stop, in the log:\n%s", logs)
	}
	if after, _ := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile)); !bytes.Equal(published, after) {
		t.Fatal("the larger tree's checkpoint was overwritten")
	}
}

func appendNote(t *testing.T, l *eventlog.Log) {
	t.Helper()
	if _, err := l.Append(context.Background(), eventlog.Draft{Type: "test.note", Payload: map[string]any{"n": "more"}}); err != nil {
		t.Fatal(err)
	}
}
