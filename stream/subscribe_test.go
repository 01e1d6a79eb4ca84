package stream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// A subscriber that never reads is dropped with ErrSlowConsumer; the writer
// never waits for it and another subscriber receives everything.
func TestSlowSubscriberIsDroppedOthersKeepReceiving(t *testing.T) {
	n := newNode(t, stream.Options{})
	slow, err := n.st.Subscribe("", 1)
	if err != nil {
		t.Fatal(err)
	}
	const total = 300
	fast, err := n.st.Subscribe("", total)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	// The appends return although slow is never read: Publish did not wait
	// for it (a blocked hook would hold every writer of the group).
	for i := 0; i < total; i += 3 {
		drafts := []eventlog.Draft{{Type: "test.a", Payload: map[string]int{"i": i}}, {Type: "test.b", Payload: map[string]int{"i": i}}, {Type: "test.c", Payload: map[string]int{"i": i}}}
		if _, err := n.log.Append(context.Background(), drafts...); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, fast, total)
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("fast subscriber: seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	kept := 0
	for range slow.C() { // ends when the channel is closed
		kept++
	}
	if !errors.Is(slow.Err(), stream.ErrSlowConsumer) {
		t.Fatalf("slow subscriber ended with %v, want ErrSlowConsumer", slow.Err())
	}
	if kept > 1 {
		t.Fatalf("slow subscriber's buffer of 1 held %d messages", kept)
	}
	st := n.st.Status()
	if st.SlowDrops != 1 || st.StreamClients != 1 {
		t.Fatalf("status: slow drops %d, stream clients %d; want 1 and 1", st.SlowDrops, st.StreamClients)
	}
	if fast.Err() != nil {
		t.Fatalf("fast subscriber: %v", fast.Err())
	}
}

// The consumer's own Close ends its subscription without an error.
func TestSubscriptionClose(t *testing.T) {
	n := newNode(t, stream.Options{})
	sub, err := n.st.Subscribe("test.*", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.st.Status().StreamClients; got != 1 {
		t.Fatalf("stream clients %d, want 1", got)
	}
	sub.Close()
	sub.Close()
	if _, ok := <-sub.C(); ok {
		t.Fatal("channel open after Close")
	}
	if sub.Err() != nil {
		t.Fatalf("Err after own Close: %v", sub.Err())
	}
	if got := n.st.Status().StreamClients; got != 0 {
		t.Fatalf("stream clients %d after Close, want 0", got)
	}
	n.appendN(t, "test.after", 2) // nothing to deliver to, nothing breaks
}

// Stopping the server ends every subscription with ErrClosed, and the log
// goes on taking writes: NATS is not the system of record.
func TestServerCloseEndsSubscriptions(t *testing.T) {
	n := newNode(t, stream.Options{})
	var subs []*stream.Subscription
	for _, f := range []string{"", "test.*", "test.one"} {
		sub, err := n.st.Subscribe(f, 10)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	n.appendN(t, "test.one", 1)
	if err := n.st.Close(); err != nil {
		t.Fatal(err)
	}
	for i, sub := range subs {
		deadline := time.After(30 * time.Second)
	drain:
		for {
			select {
			case _, ok := <-sub.C():
				if !ok {
					break drain
				}
			case <-deadline:
				t.Fatalf("subscription %d still open after Close", i)
			}
		}
		if !errors.Is(sub.Err(), stream.ErrClosed) {
			t.Fatalf("subscription %d ended with %v, want ErrClosed", i, sub.Err())
		}
	}
	if _, err := n.st.Subscribe("", 1); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
	n.appendN(t, "test.after", 3)
	if err := n.log.Healthy(); err != nil {
		t.Fatalf("log after the stream closed: %v", err)
	}
}
