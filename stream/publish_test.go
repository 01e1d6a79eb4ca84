package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// Events committed by concurrent writers in many groups reach every
// subscriber once each, in seq order, with the bytes the log stores.
func TestPublishOrderAcrossGroupsAndSubscribers(t *testing.T) {
	n := newNode(t, stream.Options{})
	const writers, perWriter = 8, 60
	total := 0
	for w := range writers {
		for i := range perWriter {
			total += 1 + (w+i)%3
		}
	}
	var subs []*stream.Subscription
	for range 4 {
		sub, err := n.st.Subscribe("", total)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs = append(subs, sub)
	}
	first := n.log.Tip().Seq + 1

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				drafts := make([]eventlog.Draft, 1+(w+i)%3)
				for k := range drafts {
					drafts[k] = eventlog.Draft{Type: "test.written", Payload: map[string]any{"w": w, "i": i, "k": k}}
				}
				if _, err := n.log.Append(context.Background(), drafts...); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	stored := map[uint64][]byte{}
	if _, err := n.log.QueryRaw(context.Background(), eventlog.Query{Limit: total + 10}, func(seq uint64, raw []byte) (bool, error) {
		stored[seq] = bytes.Clone(raw)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, sub := range subs {
		got := receive(t, sub, total)
		for k, m := range got {
			want := first + uint64(k)
			if m.Seq != want {
				t.Fatalf("subscriber %d: message %d has seq %d, want %d", i, k, m.Seq, want)
			}
			if m.Type != "test.written" {
				t.Fatalf("subscriber %d: seq %d type %q", i, m.Seq, m.Type)
			}
			if !bytes.Equal(m.Raw, stored[m.Seq]) {
				t.Fatalf("subscriber %d: seq %d bytes differ from the log's:\n%s\n%s", i, m.Seq, m.Raw, stored[m.Seq])
			}
		}
	}
	st := n.st.Status()
	if st.PublishErrors != 0 || st.Published != uint64(total) {
		t.Fatalf("status counts published %d errors %d, want %d and 0", st.Published, st.PublishErrors, total)
	}
}

// A subscription with a type filter gets exactly the events that the log's
// own type filter (GET /v1/events?type=) selects, so the stream and the
// replay agree.
func TestSubscribeTypeFilterMatchesLogQuery(t *testing.T) {
	n := newNode(t, stream.Options{})
	types := []string{"mission.created", "mission.accepted", "mission.deep.er", "missionx.created", "peer.connected", "identity.updated"}
	filters := []string{"", "mission.created", "mission.*", "mission.deep.*", "peer.*", "missionx.created", "nothing.here"}
	subs := map[string]*stream.Subscription{}
	for _, f := range filters {
		sub, err := n.st.Subscribe(f, 1000)
		if err != nil {
			t.Fatalf("subscribe %q: %v", f, err)
		}
		defer sub.Close()
		subs[f] = sub
	}
	first := n.log.Tip().Seq + 1
	for i := range 5 {
		for _, typ := range types {
			n.appendN(t, typ, 1+i%2)
		}
	}
	// One last event of a type each filter selects, so that every
	// subscription's list ends where the log's does: a message it should not
	// have had would show up before it.
	for _, f := range filters {
		typ := strings.Replace(f, "*", "marker", 1)
		if f == "" {
			typ = "zz.marker"
		}
		n.appendN(t, typ, 1)
	}
	for _, f := range filters {
		var want []uint64
		if _, err := n.log.QueryRaw(context.Background(), eventlog.Query{Type: f, Limit: 1000}, func(seq uint64, _ []byte) (bool, error) {
			if seq >= first {
				want = append(want, seq)
			}
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		got := receive(t, subs[f], len(want))
		if fmt.Sprint(seqsOf(got)) != fmt.Sprint(want) {
			t.Errorf("filter %q: got seqs %v, the log selects %v", f, seqsOf(got), want)
		}
	}
}

func seqsOf(ms []stream.Message) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func TestSubscribeRejectsBadFilter(t *testing.T) {
	n := newNode(t, stream.Options{})
	for _, f := range []string{"*", ">", "mission.>", "mission.*.x", "Mission.created", "mission", "a b.c"} {
		if sub, err := n.st.Subscribe(f, 1); err == nil {
			sub.Close()
			t.Errorf("Subscribe(%q) accepted", f)
		}
	}
}
