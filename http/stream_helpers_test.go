package http

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// streamNode is a node with a real embedded NATS server wired as serve wires
// it: the log's OnCommit is the stream's Publish, and the server has the stream.
type streamNode struct {
	*testNode
	st     *stream.Server
	tokens *commands.Tokens
	stop   func() error // Serve mode: cancel Serve and return what it returned
}

type streamNodeConfig struct {
	stream     stream.Options // NodeDID is filled in
	editServer func(*Server)
	logs       *logBuffer
	// serve runs Server.Serve on a loopback listener, as civnode serve does,
	// instead of an httptest server.
	serve bool
	// listener, if set, wraps the httptest server's listener.
	listener func(net.Listener) net.Listener
}

// waitDeadline bounds every wait for something that must happen; it is never
// an assertion about speed.
const waitDeadline = 60 * time.Second

func newStreamNode(t *testing.T, cfg streamNodeConfig) *streamNode {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	sopts := cfg.stream
	sopts.NodeDID = eventlog.DIDKey(key.Public().(ed25519.PublicKey))
	if sopts.Logger == nil {
		sopts.Logger = discardLogger()
	}
	st, err := stream.Start(sopts)
	if err != nil {
		t.Fatalf("start stream: %v", err)
	}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger(), OnCommit: st.Publish})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	// Cleanups run last first: the server stops, then the stream, then the log.
	t.Cleanup(func() { l.Close() })
	t.Cleanup(func() { st.Close() })
	ts, err := commands.NewTokens(commands.TokensOptions{Store: l, Auditor: l, NodeDID: l.NodeDID()})
	if err != nil {
		t.Fatal(err)
	}
	logger := discardLogger()
	if cfg.logs != nil {
		logger = debugLogger(cfg.logs)
	}
	s := New(Options{Log: l, OwnerToken: testToken, Logger: logger, Tokens: ts, Stream: st})
	if cfg.editServer != nil {
		cfg.editServer(s)
	}
	n := &streamNode{st: st, tokens: ts}
	if cfg.serve {
		ln := listen(t)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- s.Serve(ctx, ln) }()
		var once sync.Once
		var serveErr error
		n.stop = func() error {
			once.Do(func() { cancel(); serveErr = <-errc })
			return serveErr
		}
		t.Cleanup(func() { n.stop() })
		n.testNode = &testNode{t: t, log: l, srv: s, url: "http://" + ln.Addr().String()}
		return n
	}
	hs := httptest.NewUnstartedServer(s)
	if cfg.listener != nil {
		hs.Listener = cfg.listener(hs.Listener)
	}
	hs.Start()
	t.Cleanup(hs.Close)
	// httptest's Close waits for every handler, hijacked ones too: the stream
	// clients are told to go first.
	t.Cleanup(s.streams.shutdown)
	n.testNode = &testNode{t: t, log: l, srv: s, url: hs.URL}
	return n
}

// wsURL is the stream's URL with a query ("" or "?…").
func (n *streamNode) wsURL(query string) string {
	return "ws" + strings.TrimPrefix(n.url, "http") + "/v1/stream" + query
}

// dial opens a stream with the given headers (nil: none) and client (nil: the
// default). The connection is closed when the test ends.
func (n *streamNode) dial(t *testing.T, query string, header http.Header, client *http.Client) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, n.wsURL(query), &websocket.DialOptions{HTTPHeader: header, HTTPClient: client})
	if err == nil {
		c.SetReadLimit(-1)
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// dialOwner opens a stream with the owner token in the header.
func (n *streamNode) dialOwner(t *testing.T, query string) *websocket.Conn {
	t.Helper()
	c, resp, err := n.dial(t, query, bearer(testToken), nil)
	if err != nil {
		t.Fatalf("dial %s: %v (%s)", query, err, respBody(resp))
	}
	return c
}

// dialRefused dials and expects the handshake to be refused; it returns the
// HTTP answer.
func (n *streamNode) dialRefused(t *testing.T, query string, header http.Header) response {
	t.Helper()
	c, resp, err := n.dial(t, query, header, nil)
	if err == nil {
		c.CloseNow()
		t.Fatalf("dial %s: connected, want refused", query)
	}
	if resp == nil {
		t.Fatalf("dial %s: %v, without an HTTP answer", query, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: []byte(respBody(resp))}
}

func respBody(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	var b strings.Builder
	buf := make([]byte, 1024)
	for {
		k, err := resp.Body.Read(buf)
		b.Write(buf[:k])
		if err != nil {
			return b.String()
		}
	}
}

// streamMsg is one received message.
type streamMsg struct {
	seq uint64
	typ string
	raw []byte // the message without its trailing "\n"
}

// readMsg reads one message and checks its framing: a text message, one event
// JSON and "\n".
func readMsg(t *testing.T, c *websocket.Conn) (streamMsg, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	typ, data, err := c.Read(ctx)
	if err != nil {
		return streamMsg{}, err
	}
	if typ != websocket.MessageText {
		t.Fatalf("message type %v, want text", typ)
	}
	raw, ok := strings.CutSuffix(string(data), "\n")
	if !ok || strings.Contains(raw, "\n") {
		t.Fatalf("message %q is not one JSON line ending in \\n", data)
	}
	var ev struct {
		Seq  uint64 `json:"seq"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		t.Fatalf("message %q: %v", data, err)
	}
	return streamMsg{seq: ev.Seq, typ: ev.Type, raw: []byte(raw)}, nil
}

// readUntil reads messages until one with seq ≥ last arrives.
func readUntil(t *testing.T, c *websocket.Conn, last uint64) []streamMsg {
	t.Helper()
	var out []streamMsg
	for {
		m, err := readMsg(t, c)
		if err != nil {
			t.Fatalf("read after %d messages (waiting for seq %d): %v", len(out), last, err)
		}
		out = append(out, m)
		if m.seq >= last {
			return out
		}
	}
}

// wantSeqs checks that msgs are exactly the seqs from..to, each with the bytes
// the log stores.
func (n *streamNode) wantSeqs(t *testing.T, msgs []streamMsg, from, to uint64) {
	t.Helper()
	if uint64(len(msgs)) != to-from+1 {
		t.Errorf("got %d messages, want seqs %d..%d (%d)", len(msgs), from, to, to-from+1)
	}
	for i, m := range msgs {
		if want := from + uint64(i); m.seq != want {
			t.Fatalf("message %d has seq %d, want %d (a gap or a duplicate)", i, m.seq, want)
		}
	}
	n.wantStored(t, msgs)
}

// wantStored checks that every message holds its event exactly as stored.
func (n *streamNode) wantStored(t *testing.T, msgs []streamMsg) {
	t.Helper()
	for _, m := range msgs {
		ev, err := n.log.Event(m.seq)
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Raw()) != string(m.raw) {
			t.Fatalf("seq %d: message %s, stored %s", m.seq, m.raw, ev.Raw())
		}
	}
}

// waitFor polls cond until it holds, failing after waitDeadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeStatus reads until the connection ends and returns its close error.
func closeStatus(t *testing.T, c *websocket.Conn) (websocket.CloseError, []streamMsg) {
	t.Helper()
	ce, msgs, err := readUntilClose(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return ce, msgs
}

// readUntilClose is closeStatus for a goroutine other than the test's, where
// t.Fatal would leave the test waiting: it returns the failure instead.
func readUntilClose(t *testing.T, c *websocket.Conn) (websocket.CloseError, []streamMsg, error) {
	var msgs []streamMsg
	for {
		m, err := readMsg(t, c)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				return ce, msgs, fmt.Errorf("connection ended without a close frame after %d messages: %w", len(msgs), err)
			}
			return ce, msgs, nil
		}
		msgs = append(msgs, m)
	}
}
