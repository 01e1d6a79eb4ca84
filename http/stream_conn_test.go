package http

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestStreamConnFrames checks the frames streamConn writes itself against the
// WebSocket library's reader, at every length encoding (RFC 6455 §5.2), one at
// a time and batched, with a ping from the library between them.
func TestStreamConnFrames(t *testing.T) {
	sizes := []int{0, 1, 124, 125, 126, 65534, 65535, 65536, 300000}
	msg := func(n int) []byte { return bytes.Repeat([]byte{'a' + byte(n%26)}, n) }
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &streamResponse{ResponseWriter: w, timeout: 10 * time.Second}
		conn, err := websocket.Accept(sw, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.CloseNow()
		nc := sw.conn
		nc.upgraded()
		ctx := conn.CloseRead(context.Background())
		for _, n := range sizes { // one at a time, the last byte a "\n"
			if err := nc.text(msg(n), true); err != nil {
				t.Error(err)
				return
			}
		}
		nc.cork()
		for _, n := range sizes { // batched, as they are
			if err := nc.text(msg(n), false); err != nil {
				t.Error(err)
				return
			}
		}
		if err := nc.flush(); err != nil {
			t.Error(err)
		}
		if err := conn.Ping(ctx); err != nil {
			t.Error(err)
		}
		conn.Close(websocket.StatusNormalClosure, "done")
		if err := nc.text([]byte("late"), false); err == nil {
			t.Error("text after the close frame: no error")
		}
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	var want [][]byte
	for _, n := range sizes {
		want = append(want, append(msg(n), '\n'))
	}
	for _, n := range sizes {
		want = append(want, msg(n))
	}
	for i, w := range want {
		typ, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != websocket.MessageText || !bytes.Equal(got, w) {
			t.Fatalf("message %d: type %v, %d bytes, want text of %d", i, typ, len(got), len(w))
		}
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the messages: %v, want the close", err)
	}
}
