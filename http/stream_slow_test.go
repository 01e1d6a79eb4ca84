//go:build unix

package http

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civnode/civnode/eventlog"
)

// A client that stops reading is dropped once it falls a buffer behind, with
// 1008 and a reason that says where to resume, while the writer and every other
// client go on: the others receive every event.
//
// Its TCP connection has tiny buffers at both ends, so that it stalls after a
// few events rather than after the megabytes loopback sockets may buffer.
func TestStreamSlowConsumerDropped(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{
		listener: func(ln net.Listener) net.Listener { return smallSendBuffers{ln} },
		editServer: func(s *Server) {
			s.streams.buffer = 256
			// The stalled write must outlast the test's stall, so that the
			// client is dropped for its buffer, not its write deadline; and
			// it answers no pings while stalled.
			s.streams.writeTimeout = 10 * time.Minute
			s.streams.pingInterval = 10 * time.Minute
		}})
	start := n.log.Tip().Seq
	stalled, resp, err := n.dial(t, "", bearer(testToken), stallingClient())
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, respBody(resp))
	}
	var healthy []*websocket.Conn
	for range 3 {
		healthy = append(healthy, n.dialOwner(t, ""))
	}
	// The healthy clients read as the events come.
	received := make([][]streamMsg, len(healthy))
	got := make([]atomic.Uint64, len(healthy)) // the last seq each has read
	var lastSeq atomic.Uint64
	var wg sync.WaitGroup
	for i, c := range healthy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := readMsg(t, c)
				if err != nil {
					t.Errorf("healthy client %d: %v after %d messages", i, err, len(received[i]))
					return
				}
				received[i] = append(received[i], m)
				got[i].Store(m.seq)
				if last := lastSeq.Load(); last != 0 && m.seq >= last {
					return
				}
			}
		}()
	}
	pad := strings.Repeat("x", 1000)
	for i := 0; n.st.Status().SlowDrops == 0; i++ {
		evs, err := n.log.Append(context.Background(), eventlog.Draft{Type: "test.fill", Payload: map[string]any{"i": i, "pad": pad}})
		if err != nil {
			t.Fatal(err)
		}
		if i%64 == 63 {
			// Let the healthy clients catch up now and then, so that only the
			// stalled one can fall a buffer behind, however busy the machine.
			waitFor(t, "the healthy clients to catch up", func() bool {
				for i := range got {
					if got[i].Load() < evs[0].Seq {
						return false
					}
				}
				return true
			})
		}
		if i > 100_000 {
			t.Fatal("the stalled client was never dropped")
		}
	}
	final := n.log.Tip().Seq + 3
	lastSeq.Store(final)
	n.appendEvents("test.after", "test.after", "test.after")
	wg.Wait()
	for i := range healthy {
		n.wantSeqs(t, received[i], start+1, final)
	}
	// The stalled client reads again: what was on its way, then the close.
	ce, msgs := closeStatus(t, stalled)
	if ce.Code != websocket.StatusPolicyViolation || !strings.HasPrefix(ce.Reason, "slow consumer: fell more than 256 events behind") {
		t.Fatalf("close = %d %q, want 1008 slow consumer", ce.Code, ce.Reason)
	}
	if len(msgs) == 0 {
		t.Fatal("the stalled client got nothing before its close")
	}
	n.wantSeqs(t, msgs, start+1, msgs[len(msgs)-1].seq)
	if want := fmt.Sprintf("resume with after_seq=%d", msgs[len(msgs)-1].seq); !strings.HasSuffix(ce.Reason, want) {
		t.Errorf("reason %q does not end in %q, the last seq the client got", ce.Reason, want)
	}
	waitFor(t, "the dropped client to leave the status", func() bool {
		var st networkStatus
		n.get("/v1/client/network/status").decode(t, &st)
		return st.StreamClients == len(healthy) && st.SlowConsumerDrops == 1
	})
}

// stallingClient is an HTTP client whose connections have a tiny receive
// buffer, set before connecting so that the window never grows past it.
func stallingClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// smallSendBuffers gives the server's side of every connection a small send
// buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}
