//go:build unix

package http

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// TestStreamWriteTimeoutDropsClient: a stream client that takes nothing for
// the write time-out (streamWriteTimeout) is cut off, although its buffer
// never filled.
func TestStreamWriteTimeoutDropsClient(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{
		listener: func(ln net.Listener) net.Listener { return smallSendBuffers{ln} },
		editServer: func(s *Server) {
			s.streams.buffer = 1 << 20 // never the reason
			s.streams.writeTimeout = 100 * time.Millisecond
			s.streams.pingInterval = 10 * time.Minute
		}})
	stalled, resp, err := n.dial(t, "", bearer(testToken), stallingClient())
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, respBody(resp))
	}
	defer stalled.CloseNow()
	// Far more than the socket buffers at both ends hold: a write is stuck.
	pad := strings.Repeat("x", 1000)
	for i := range 300 {
		if _, err := n.log.Append(context.Background(), eventlog.Draft{Type: "test.fill", Payload: map[string]any{"i": i, "pad": pad}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the stalled client to be cut off", func() bool {
		var st networkStatus
		n.get("/v1/client/network/status").decode(t, &st)
		return st.StreamClients == 0
	})
	if n.st.Status().SlowDrops != 0 {
		t.Errorf("the subscription overflowed: the client was dropped for its buffer, not its write")
	}
}
