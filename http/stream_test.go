package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civnode/civnode/eventlog"
)

// Live events arrive in seq order, one per text message, as stored, from the
// moment of the upgrade: nothing from before it.
func TestStreamLiveOrder(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{})
	n.appendEvents("test.before", "test.before")
	start := n.log.Tip().Seq
	c := n.dialOwner(t, "")
	var types []string
	for i := range 300 {
		types = append(types, fmt.Sprintf("test.kind%d", i%3))
	}
	n.appendEvents(types...)
	msgs := readUntil(t, c, start+300)
	n.wantSeqs(t, msgs, start+1, start+300)
	for i, m := range msgs {
		if m.typ != types[i] {
			t.Fatalf("message %d: type %s, want %s", i, m.typ, types[i])
		}
	}
}

// A client that joins with after_seq= or since= while 8 writers append gets
// every event after that point exactly once, in order: the replay from the log
// and the live stream meet with no gap and no duplicate.
func TestStreamCatchUpWithConcurrentWriters(t *testing.T) {
	for _, mode := range []string{"after_seq", "since"} {
		t.Run(mode, func(t *testing.T) {
			n := newStreamNode(t, streamNodeConfig{editServer: func(s *Server) {
				// Small pages, so that the replay takes many queries while the
				// writers move the tip; a large buffer, since this test is about
				// gaps, not slow consumers.
				s.streams.replayEvents = 7
				s.streams.buffer = 1 << 16
			}})
			before := n.appendEvents(repeatType("test.before", 40)...)
			from := before[9] // the client resumes after this event

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var appended atomic.Int64
			errc := make(chan error, 8)
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Paced so that a client on a busy machine keeps up; the
					// pace is not what the test checks.
					tick := time.NewTicker(2 * time.Millisecond)
					defer tick.Stop()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						_, err := n.log.Append(context.Background(), eventlog.Draft{Type: "test.concurrent",
							Payload: map[string]any{"writer": w, "i": i}})
						if err != nil {
							errc <- err
							return
						}
						appended.Add(1)
					}
				}()
			}
			// Join once the writers are under way, so that the replay races them.
			waitFor(t, "the writers to start", func() bool { return appended.Load() >= 50 })
			q := "?after_seq=" + fmt.Sprint(from.Seq)
			if mode == "since" {
				q = "?since=" + url.QueryEscape(from.Timestamp)
			}
			c := n.dialOwner(t, q)
			joinedAt := n.log.Tip().Seq
			// Keep writing until the client is well into the live part.
			first := readUntil(t, c, joinedAt+200)
			close(stop)
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			final := n.log.Tip().Seq
			if last := first[len(first)-1].seq; last < final {
				first = append(first, readUntil(t, c, final)...)
			}
			n.wantSeqs(t, first, from.Seq+1, final)
		})
	}
}

// type= filters the replay and the live events alike, exactly or by prefix.
func TestStreamTypeFilter(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{})
	n.appendEvents("mission.created", "payment.settled", "mission.accepted")
	exact := n.dialOwner(t, "?type=payment.settled")
	prefix := n.dialOwner(t, "?type=mission.*&after_seq=0")
	n.appendEvents("payment.settled", "mission.completed", "missionary.x", "mission.sub.deep", "payment.settled")

	got := func(c *websocket.Conn, last uint64) string {
		var out []string
		for _, m := range readUntil(t, c, last) {
			out = append(out, fmt.Sprintf("%d:%s", m.seq, m.typ))
		}
		return strings.Join(out, " ")
	}
	if g, want := got(exact, 9), "5:payment.settled 9:payment.settled"; g != want {
		t.Errorf("type=payment.settled: %s, want %s", g, want)
	}
	// The replay from genesis (after_seq=0) holds the first two missions.
	if g, want := got(prefix, 8), "2:mission.created 4:mission.accepted 6:mission.completed 8:mission.sub.deep"; g != want {
		t.Errorf("type=mission.*: %s, want %s", g, want)
	}
}

// Bad parameters, and a request that is not a WebSocket, are refused with a JSON
// error before the upgrade.
func TestStreamRefusedBeforeUpgrade(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{})
	since := url.QueryEscape(time.Now().UTC().Format(time.RFC3339Nano))
	for _, tc := range []struct {
		query, code, field string
	}{
		{"?type=Mission", "invalid_field", "type"},
		{"?type=mission.*.x", "invalid_field", "type"},
		{"?since=yesterday", "invalid_field", "since"},
		{"?after_seq=-1", "invalid_field", "after_seq"},
		{"?after_seq=1x", "invalid_field", "after_seq"},
		{"?after_seq=99", "invalid_field", "after_seq"}, // beyond the tip
		{"?after_seq=0&since=" + since, "invalid_field", "after_seq"},
		{"?type=a&type=b", "invalid_query", "type"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			n.dialRefused(t, tc.query, bearer(testToken)).wantError(t, http.StatusBadRequest, tc.code, tc.field)
		})
	}
	t.Run("not a websocket", func(t *testing.T) {
		r := n.get("/v1/stream")
		r.wantError(t, http.StatusUpgradeRequired, "upgrade_required", "")
		if r.header.Get("Upgrade") != "websocket" {
			t.Errorf("Upgrade = %q, want websocket", r.header.Get("Upgrade"))
		}
	})
}

// The token: the header is preferred, ?token= is the fallback, and without a
// valid one the answer is 401 before the upgrade. An observer may follow the
// stream. The token in the query string reaches no log line and no audit entry.
func TestStreamAuth(t *testing.T) {
	logs := &logBuffer{}
	n := newStreamNode(t, streamNodeConfig{logs: logs})
	obs := issue(t, n.tokens, "observer", "")
	const bad = "not-a-token-5f1e0c3a9b"
	for _, tc := range []struct {
		name   string
		query  string
		header http.Header
		ok     bool
	}{
		{"no token", "", nil, false},
		{"bad header", "", bearer(bad), false},
		{"bad query token", "?token=" + bad, nil, false},
		{"empty query token", "?token=", nil, false},
		{"query token", "?token=" + testToken, nil, true},
		{"query token with a filter", "?type=test.x&token=" + testToken, nil, true},
		{"observer header", "", bearer(obs.Secret), true},
		{"observer query token", "?token=" + url.QueryEscape(obs.Secret), nil, true},
		{"header preferred over a bad query token", "?token=" + bad, bearer(testToken), true},
		{"bad header beats a good query token", "?token=" + testToken, bearer(bad), false},
		{"token twice", "?token=" + testToken + "&token=" + testToken, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				r := n.dialRefused(t, tc.query, tc.header)
				r.wantError(t, http.StatusUnauthorized, "unauthorized", "")
				if r.header.Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate on the 401")
				}
				return
			}
			c, resp, err := n.dial(t, tc.query, tc.header, nil)
			if err != nil {
				t.Fatalf("dial: %v (%s)", err, respBody(resp))
			}
			evs := n.appendEvents("test.x")
			if m, err := readMsg(t, c); err != nil || m.seq != evs[0].Seq {
				t.Fatalf("read: %+v, %v; want seq %d", m, err, evs[0].Seq)
			}
		})
	}
	for _, secret := range []string{testToken, bad, obs.Secret} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a token reached the log:\n%s", logs.String())
		}
		for _, e := range n.auditEntries("") {
			if strings.Contains(string(e.Detail), secret) {
				t.Errorf("a token reached the audit entry %s %s", e.Action, e.Detail)
			}
		}
	}
	failed := n.auditEntries("auth.failed")
	if len(failed) == 0 || !strings.Contains(string(failed[0].Detail), `"path":"/v1/stream"`) {
		t.Errorf("auth.failed entries: %+v", failed)
	}
}

// A clean shutdown (Serve's context canceled) closes every stream client with
// 1001 and waits for them before Serve returns.
func TestStreamShutdownClosesWithGoingAway(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{serve: true})
	var clients []*websocket.Conn
	for range 3 {
		clients = append(clients, n.dialOwner(t, ""))
	}
	evs := n.appendEvents("test.x")
	for _, c := range clients {
		if m, err := readMsg(t, c); err != nil || m.seq != evs[0].Seq {
			t.Fatalf("read: %+v, %v", m, err)
		}
	}
	codes := make(chan websocket.CloseError, len(clients))
	for _, c := range clients {
		go func() {
			ce, _, err := readUntilClose(t, c)
			if err != nil {
				t.Error(err)
			}
			codes <- ce
		}()
	}
	if err := n.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	for range clients {
		if ce := <-codes; ce.Code != websocket.StatusGoingAway || ce.Reason != reasonShutdown {
			t.Errorf("close = %d %q, want 1001 %q", ce.Code, ce.Reason, reasonShutdown)
		}
	}
	if got := n.st.Status().StreamClients; got != 0 {
		t.Errorf("%d stream subscriptions left after Serve returned", got)
	}
}

// The server pings; a client that answers stays, one that does not is closed.
func TestStreamKeepalive(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{editServer: func(s *Server) {
		s.streams.pingInterval = 20 * time.Millisecond
		s.streams.pongTimeout = 200 * time.Millisecond
	}})
	dial := func(pong bool, pings *atomic.Int64) *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
		defer cancel()
		c, _, err := websocket.Dial(ctx, n.wsURL(""), &websocket.DialOptions{HTTPHeader: bearer(testToken),
			OnPingReceived: func(context.Context, []byte) bool { pings.Add(1); return pong }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	var answered, ignored atomic.Int64
	alive := dial(true, &answered)
	mute := dial(false, &ignored)
	// Pings are answered as the client reads.
	readDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
		defer cancel()
		_, _, err := alive.Read(ctx)
		readDone <- err
	}()
	ce, _ := closeStatus(t, mute)
	if ce.Code != websocket.StatusPolicyViolation || ce.Reason != reasonKeepalive {
		t.Errorf("mute client closed with %d %q, want 1008 %q", ce.Code, ce.Reason, reasonKeepalive)
	}
	waitFor(t, "several pings to the answering client", func() bool { return answered.Load() >= 5 })
	n.appendEvents("test.x")
	if err := <-readDone; err != nil {
		t.Fatalf("the answering client was dropped: %v", err)
	}
}

// repeatType is k copies of typ.
func repeatType(typ string, k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = typ
	}
	return out
}

// When the writers outrun a replay, so that the live subscription behind it
// overflows, the catch-up runs again from where the replay ended under a fresh
// subscription: the client still gets every event once.
func TestStreamCatchUpOutrunByWriters(t *testing.T) {
	var n *streamNode
	n = newStreamNode(t, streamNodeConfig{editServer: func(s *Server) {
		s.streams.buffer = 4
		s.streams.replayEvents = 3
		s.streams.replayed = func(round int) {
			if round == 1 {
				// More than the buffer arrive while the first round ends.
				n.appendEvents(repeatType("test.during", 10)...)
				waitFor(t, "the subscription to overflow", func() bool { return n.st.Status().SlowDrops == 1 })
			}
		}
	}})
	n.appendEvents(repeatType("test.before", 20)...)
	c := n.dialOwner(t, "?after_seq=5")
	first := readUntil(t, c, 31)
	n.appendEvents("test.after", "test.after")
	n.wantSeqs(t, append(first, readUntil(t, c, 33)...), 6, 33)
}
