package localnode

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// A larger tree the guard was told of (a witness's 409 during submission)
// keeps the log held although no source says so when the guard checks
// again: a witness that said it and is then unreachable has not taken it
// back. The chain reaching that size lets it go.
func TestToldTreeOutlivesItsSource(t *testing.T) {
	ctx := context.Background()
	chain := openMemChain(t)
	g := newForkGuard(&forkGuard{chain: chain, dir: datadir.Dir(t.TempDir()), logger: slog.New(slog.DiscardHandler), startWait: time.Millisecond})
	if !g.checkOnce(ctx, time.Second) || chain.Held() != nil {
		t.Fatalf("a guard with no sources did not let the log append: %+v", chain.Held())
	}
	tip := chain.TreeSize()
	g.WitnessAhead("w.example/witness", tip+2)
	if b := chain.Held(); b == nil || b.Reason != heldBehind || b.Size != tip+2 {
		t.Fatalf("after a witness's larger tree the hold is %+v", b)
	}
	if g.checkOnce(ctx, time.Hour); chain.Held() == nil {
		t.Fatal("checked again with no source answering, the guard forgot the larger tree it was told of")
	}
	if _, err := chain.AppendHeld(ctx, eventlog.Draft{Type: "test.note", Payload: map[string]int{"n": 1}},
		eventlog.Draft{Type: "test.note", Payload: map[string]int{"n": 2}}); err != nil {
		t.Fatal(err)
	}
	if g.checkOnce(ctx, time.Hour); chain.Held() != nil {
		t.Fatalf("the chain holds the tree it was told of, and is still held: %+v", chain.Held())
	}
}

// openMemChain is a node's chain in memory, with a new key, closed when the
// test ends.
func openMemChain(t *testing.T) *eventlog.Log {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chain.Close() })
	return chain
}
