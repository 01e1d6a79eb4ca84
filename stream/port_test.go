package stream_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/stream/streamtest"
)

// asyncErrors connects to the node's port and collects the errors NATS
// reports on the connection after the fact (permission violations, the
// subscription cap).
func asyncErrors(t *testing.T, n *node) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 100)
	nc, err := nats.Connect(n.url(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// nextError waits for the connection's next asynchronous error; the deadline
// only ends a hang.
func nextError(t *testing.T, errs <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("no error for %s", what)
		return nil
	}
}

// The port is a read-only feed of this node: its clients may subscribe to the
// node's subjects only and publish nothing, so that they can neither use the
// node as a relay (to each other, or to a hub over the leaf link) nor ask
// $SYS about the other clients' connections.
func TestPortIsAReadOnlyFeedOfTheNode(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	a, aerrs := asyncErrors(t, n)
	b, berrs := asyncErrors(t, n)

	if _, err := b.SubscribeSync("relay.test"); err != nil {
		t.Fatal(err)
	}
	_ = b.Flush()
	if err := nextError(t, berrs, "a subscription outside civnode.<node>.>"); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("subscribing to relay.test: %v, want a permissions violation", err)
	}
	if _, err := b.SubscribeSync("civnode.>"); err != nil {
		t.Fatal(err)
	}
	_ = b.Flush()
	if err := nextError(t, berrs, "a subscription to every node"); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("subscribing to civnode.>: %v, want a permissions violation", err)
	}

	if err := a.Publish("relay.test", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	if err := nextError(t, aerrs, "a publication outside civnode.>"); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("publishing on relay.test: %v, want a permissions violation", err)
	}
	if err := a.Publish(stream.EventSubject(n.did, "mission.settled"), []byte(`{"forged":true}`)); err != nil {
		t.Fatal(err)
	}
	_ = a.Flush()
	if err := nextError(t, aerrs, "a publication on the node's subject"); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("publishing on the node's subject: %v, want a permissions violation", err)
	}

	// $SYS.REQ.SERVER.PING.CONNZ answers any account's client with the
	// connections of its account; a port client gets no answer.
	if m, err := a.Request("$SYS.REQ.SERVER.PING.CONNZ", nil, time.Second); err == nil {
		t.Fatalf("a port client asked $SYS about connections and got: %.300s", m.Data)
	}

	// The node's subjects still flow.
	sub, err := b.SubscribeSync("civnode." + n.did + ".events.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	ev := n.appendN(t, "test.feed", 1)[0]
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("port client after the refusals: %v", err)
	}
	if string(m.Data) != string(ev.Raw()) {
		t.Fatalf("port client after the refusals got %q, want seq %d", m.Data, ev.Seq)
	}
}

// MaxConns caps the port's clients; the node's own connections and
// subscribers are apart, and a place that frees up is taken again.
func TestPortMaxConns(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0", MaxConns: 2})
	url := n.url()
	var held []*nats.Conn
	for range 2 {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatalf("client %d of 2: %v", len(held)+1, err)
		}
		defer nc.Close()
		held = append(held, nc)
	}
	// The server answers -ERR 'maximum connections exceeded' and closes at
	// once, so the client sees that or the closed socket under its CONNECT.
	if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a third client connected; want it refused")
	}
	sub, err := n.st.Subscribe("", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	n.appendN(t, "test.capped", 1)
	receive(t, sub, 1)

	held[0].Close()
	waitFor(t, "a freed place to be taken", func() bool {
		nc, err := nats.Connect(url)
		if err != nil {
			return false
		}
		nc.Close()
		return true
	})
}

// MaxSubs caps one port client's subscriptions: one more is refused, the
// ones it holds keep working. The leaf link, which carries the hub's
// interest, is not capped.
func TestPortMaxSubs(t *testing.T) {
	hub := streamtest.StartHub(t)
	var p peers
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0", MaxSubs: 2, LeafURL: hub.LeafURL, OnPeer: p.add, LeafPoll: 20 * time.Millisecond})
	nc, errs := asyncErrors(t, n)
	var subs []*nats.Subscription
	for i := range 3 {
		s, err := nc.SubscribeSync(stream.EventSubject(n.did, "test.t"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	_ = nc.Flush()
	if err := nextError(t, errs, "a third subscription"); !errors.Is(err, nats.ErrMaxSubscriptionsExceeded) {
		t.Fatalf("third subscription: %v, want %v", err, nats.ErrMaxSubscriptionsExceeded)
	}
	ev := n.appendN(t, "test.t1", 1)[0]
	if m, err := subs[1].NextMsg(30 * time.Second); err != nil || m.Header.Get(stream.HeaderSeq) != strconv.FormatUint(ev.Seq, 10) {
		t.Fatalf("a subscription within the cap: %v", err)
	}

	// Three subscriptions at the hub, each of its own subject, all served.
	waitFor(t, "the leaf link to come up", func() bool { return len(p.list()) == 1 })
	hc, err := nats.Connect(hub.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	var hsubs []*nats.Subscription
	for i := range 3 {
		s, err := hc.SubscribeSync(stream.EventSubject(n.did, "hub.t"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		hsubs = append(hsubs, s)
	}
	if err := hc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, s := range hsubs {
		waitFor(t, "hub subscription "+strconv.Itoa(i)+" to be served over the link", func() bool {
			n.appendN(t, "hub.t"+strconv.Itoa(i), 1)
			_, err := s.NextMsg(100 * time.Millisecond)
			return err == nil
		})
	}
}

// By default a port client cannot make thousands of subscriptions.
func TestPortSubscriptionsCappedByDefault(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	nc, errs := asyncErrors(t, n)
	for i := range 1000 {
		if _, err := nc.SubscribeSync(stream.EventSubject(n.did, "test.t"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	_ = nc.Flush()
	if err := nextError(t, errs, "1000 subscriptions"); !errors.Is(err, nats.ErrMaxSubscriptionsExceeded) {
		t.Fatalf("1000 subscriptions: %v, want %v", err, nats.ErrMaxSubscriptionsExceeded)
	}
}

// A port client that reads nothing is cut off once MaxPending bytes are
// queued for it; the node's own subscribers get every event.
func TestPortMaxPending(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0", MaxPending: stream.MaxPayload})
	conn, err := net.Dial("tcp", n.st.Status().NATS.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("first line %q: %v", line, err)
	}
	if _, err := io.WriteString(conn, "CONNECT {\"verbose\":false,\"protocol\":1,\"auth_token\":\""+testToken+"\"}\r\nSUB civnode."+n.did+".events.> 1\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "PONG\r\n" {
		t.Fatalf("after SUB: %q, %v", line, err)
	}
	inproc, err := n.st.Subscribe("", 200)
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	// 160 events of 256 KiB: 40 MiB, past the 8 MiB queue and the sockets'
	// own buffers, while the client reads nothing.
	pad := strings.Repeat("x", 256<<10)
	for range 160 {
		if _, err := n.log.Append(t.Context(), eventlogDraft("test.big", pad)); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, inproc, 160)
	// Now read: what was buffered, then the end the server made.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.Copy(io.Discard, r)
	if err != nil {
		t.Fatalf("the slow client was not cut off (read %d bytes): %v", got, err)
	}
	if got >= 40<<20 {
		t.Fatalf("the slow client read %d bytes: everything, nothing was cut", got)
	}
}

// Start refuses a queue smaller than the largest message.
func TestPortMaxPendingBelowPayload(t *testing.T) {
	_, err := stream.Start(stream.Options{NodeDID: "did:key:zTest", MaxPending: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("Start with a 1 MiB queue: %v", err)
	}
}

// A port client that sends a message larger than portMaxPayload (1 KiB) is
// closed with a payload violation. It speaks the protocol itself: a client
// library may refuse such a message before sending it, once the server has
// told it the bound, and whether it has by then is a race; the server's own
// refusal is what must hold for any client.
func TestPortMaxPayload(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	conn, err := net.Dial("tcp", n.st.Status().NATS.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("first line %q: %v", line, err)
	}
	payload := strings.Repeat("x", 2<<10)
	if _, err := io.WriteString(conn, "CONNECT {\"verbose\":false,\"protocol\":1,\"auth_token\":\""+testToken+"\"}\r\nPUB civnode.x "+
		strconv.Itoa(len(payload))+"\r\n"+payload+"\r\n"); err != nil {
		t.Fatal(err)
	}
	// The server answers with -ERR and closes: the read ends at EOF, or at a
	// reset when the close found the payload still unread in its buffer. The
	// deadline only ends a hang.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			lines = append(lines, strings.TrimSpace(line))
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a 2 KiB message from a port client did not close its connection (read %q)", lines)
		}
		if err != nil {
			break
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "-ERR") && strings.Contains(strings.ToLower(l), "payload") {
			return
		}
	}
	t.Fatalf("closed after %q, want a payload violation", lines)
}
