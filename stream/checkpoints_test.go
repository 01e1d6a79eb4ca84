package stream_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// PublishCheckpoints publishes the tree's signed checkpoint as the tree
// grows: a NATS subscriber gets a checkpoint that verifies under the node's
// key, with its size in the header, covering an event appended after it
// subscribed; it returns once ctx is done.
func TestPublishCheckpoints(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	nc, err := nats.Connect(n.url(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(stream.CheckpointsSubject(n.did))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.st.PublishCheckpoints(ctx, n.log, 10*time.Millisecond)
	}()
	n.appendN(t, "test.note", 3)
	tip := n.log.Tip().Seq

	deadline := time.Now().Add(30 * time.Second)
	for {
		msg, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no checkpoint covering seq %d: %v", tip, err)
		}
		head, err := eventlog.OpenCheckpoint(msg.Data, n.did, n.log.PublicKey())
		if err != nil {
			t.Fatalf("a published checkpoint does not verify: %v\n%s", err, msg.Data)
		}
		if got := msg.Header.Get(stream.HeaderTreeSize); got != strconv.FormatInt(head.Size, 10) {
			t.Fatalf("header %s %q, note size %d", stream.HeaderTreeSize, got, head.Size)
		}
		if uint64(head.Size) >= tip {
			break
		}
	}
	cancel()
	<-done
}
