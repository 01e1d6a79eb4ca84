package stream_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/stream/streamtest"
)

// peers records OnPeer calls.
type peers struct {
	mu      sync.Mutex
	changes []stream.PeerChange
}

func (p *peers) add(c stream.PeerChange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.changes = append(p.changes, c)
}

func (p *peers) list() []stream.PeerChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]stream.PeerChange(nil), p.changes...)
}

// A node that joins a real, separate nats-server as a leaf node carries its
// events there, in order, for observers subscribed at the hub; the link going
// up, down and up again is reported to OnPeer, without credentials.
func TestLeafNodeCarriesEventsToHub(t *testing.T) {
	hub := streamtest.StartHub(t)
	var p peers
	leafURL := strings.Replace(hub.LeafURL, "nats://", "nats://user:s3cret@", 1)
	n := newNode(t, stream.Options{LeafURL: leafURL, OnPeer: p.add, LeafPoll: 20 * time.Millisecond, Listen: "127.0.0.1:0"})
	waitFor(t, "the leaf link to come up", func() bool { return len(p.list()) == 1 })
	up := p.list()[0]
	hubAddr := strings.TrimPrefix(hub.LeafURL, "nats://")
	if !up.Connected || up.Kind != "leaf" || up.Remote != hubAddr || up.Name == "" || up.ServerID != up.Name {
		t.Fatalf("link up reported as %+v; want connected leaf to %s with the hub's id as name", up, hubAddr)
	}
	st := n.st.Status()
	if len(st.Leafs) != 1 || !st.Leafs[0].Connected || st.Leafs[0].Remote != hubAddr || st.Leafs[0].Since.IsZero() {
		t.Fatalf("status leafs %+v", st.Leafs)
	}
	link, ok := n.st.LeafLink()
	if !ok || !link.Up || link.Remote != hubAddr || !link.Since.Equal(st.Leafs[0].Since) {
		t.Fatalf("leaf link %+v %v while up; status %+v", link, ok, st.Leafs)
	}
	upSince := link.Since

	nc, err := nats.Connect(hub.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("civnode." + n.did + ".events.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The hub's interest travels over the link; events published before it
	// arrives are not forwarded, so publish probes until one gets through.
	var first uint64
	waitFor(t, "the hub's subscription to reach the node", func() bool {
		ev := n.appendN(t, "test.probe", 1)[0]
		m, err := sub.NextMsg(100 * time.Millisecond)
		if err != nil {
			return false
		}
		first, _ = strconv.ParseUint(m.Header.Get(stream.HeaderSeq), 10, 64)
		_ = ev
		return true
	})
	// Drain probes that were in flight, then check order on a fresh run.
	tip := n.log.Tip().Seq
	for first < tip {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("probe after seq %d: %v", first, err)
		}
		first, _ = strconv.ParseUint(m.Header.Get(stream.HeaderSeq), 10, 64)
	}
	evs := n.appendN(t, "test.via_leaf", 50)
	for i, ev := range evs {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("hub got %d of %d events: %v", i, len(evs), err)
		}
		if got := m.Header.Get(stream.HeaderSeq); got != strconv.FormatUint(ev.Seq, 10) || string(m.Data) != string(ev.Raw()) {
			t.Fatalf("hub message %d: seq %s, want %d", i, got, ev.Seq)
		}
	}

	// What anyone publishes at the hub on the node's subjects reaches neither
	// the node's own subscribers, which feed the WebSocket observers, nor the
	// clients of the node's own port: each forgery, which the hub has taken
	// (Flush), is followed by a real event, and the next message each of them
	// sees is that event. Rounds, because the hub forwards only once interest
	// has crossed the link, which nothing here can observe.
	inproc, err := n.st.Subscribe("", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	local, err := nats.Connect(n.url())
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	seen, err := local.SubscribeSync("civnode." + n.did + ".events.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Flush(); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		if err := nc.PublishMsg(&nats.Msg{Subject: stream.EventSubject(n.did, "mission.settled"),
			Header: nats.Header{stream.HeaderSeq: {"999999"}}, Data: []byte(`{"forged":true}`)}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		real := n.appendN(t, "test.real", 1)[0]
		// Subscribe may also deliver events published just before it
		// returned (its doc): those are the log's own, byte for byte.
		// Anything else before the real event is the hub's.
		for m := receive(t, inproc, 1)[0]; m.Seq != real.Seq; m = receive(t, inproc, 1)[0] {
			if ev, err := n.log.Event(m.Seq); m.Seq > real.Seq || err != nil || string(ev.Raw()) != string(m.Raw) {
				t.Fatalf("round %d: the node's subscriber got %s (seq %d) before the real seq %d: the hub injected an event", round, m.Type, m.Seq, real.Seq)
			}
		}
		m, err := seen.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("round %d: port client: %v", round, err)
		}
		if string(m.Data) != string(real.Raw()) {
			t.Fatalf("round %d: the port client got %s %q (seq %s) before the real seq %d: the hub injected an event",
				round, m.Subject, m.Data, m.Header.Get(stream.HeaderSeq), real.Seq)
		}
	}

	hub.Stop()
	waitFor(t, "the leaf link to be reported down", func() bool { return len(p.list()) == 2 })
	down := p.list()[1]
	if down.Connected || down.Remote != up.Remote || down.Name != up.Name {
		t.Fatalf("link down reported as %+v after %+v", down, up)
	}
	if st := n.st.Status(); len(st.Leafs) != 1 || st.Leafs[0].Connected || !st.Leafs[0].Since.After(upSince) {
		t.Fatalf("status leafs while the hub is down: %+v (up since %v)", st.Leafs, upSince)
	}
	link, _ = n.st.LeafLink()
	if link.Up || link.Remote != hubAddr || !link.Since.After(upSince) {
		t.Fatalf("leaf link %+v while the hub is down", link)
	}
	downSince := link.Since
	n.appendN(t, "test.hub_down", 3) // the log does not care

	hub.Restart()
	waitFor(t, "the leaf link to come back", func() bool { return len(p.list()) == 3 })
	if again := p.list()[2]; !again.Connected || again.Remote != up.Remote {
		t.Fatalf("link back reported as %+v", again)
	}
	if link, _ := n.st.LeafLink(); !link.Up || !link.Since.After(downSince) {
		t.Fatalf("leaf link %+v once back (down since %v)", link, downSince)
	}
	for _, c := range p.list() {
		if strings.Contains(c.Remote+c.Name+c.ServerID, "s3cret") {
			t.Fatalf("a peer change carries the URL's password: %+v", c)
		}
	}
}
