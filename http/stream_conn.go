package http

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// streamConn is the connection under one stream client's WebSocket. It does
// three things the WebSocket library does not:
//
//   - It holds a batch. Between cork and flush, the frames the library writes
//     are kept and then written with one write(2): a client that has several
//     events waiting gets them in one system call, not one each. At 1,000
//     events/s to 100 clients the writes were about half the node's CPU.
//   - It bounds each write with the socket's write deadline, moved only when
//     it is more than a tenth of the timeout old, instead of a context with a
//     timeout per message, which costs the library a timer and an AfterFunc
//     for every frame.
//   - It frames the events itself (text): one unmasked text frame is a
//     header of 2 to 10 bytes (RFC 6455 §5.2), appended to the batch with
//     the event's bytes, where the library takes two locks, a copy into its
//     buffer and a flush for every message. The library still writes every
//     control frame (ping, pong, close); once it has written a close frame,
//     text refuses, as the library would.
//
// Every write, the library's own (pings, pongs, the close frame) included,
// goes through Write under mu, so frames are never interleaved and keep their
// order.
type streamConn struct {
	net.Conn
	timeout time.Duration

	mu       sync.Mutex
	corked   bool
	batch    []byte
	deadline time.Time // the write deadline set on Conn
	cut      atomic.Bool
	// framed is set once the handshake is written: from then on, every Write
	// of the library's starts a frame (it flushes each frame whole, and its
	// control frames fit its buffer), so closeSent can read the opcode.
	framed    bool
	closeSent bool
}

// streamBatchKeep bounds the batch buffer a client keeps between batches; a
// replay page may grow it to its own size once.
const streamBatchKeep = 64 << 10

func (c *streamConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.framed && len(p) > 0 && p[0]&0x0f == wsOpClose {
		c.closeSent = true
	}
	if c.corked {
		c.batch = append(c.batch, p...)
		return len(p), nil
	}
	return c.write(p)
}

// wsOpClose is the opcode of a close frame.
const wsOpClose = 0x8

// upgraded marks the end of the handshake.
func (c *streamConn) upgraded() {
	c.mu.Lock()
	c.framed = true
	c.mu.Unlock()
}

// text sends one text message, msg followed by "\n" if newline is set, as
// one final, unmasked frame: into the batch when corked, else at once.
func (c *streamConn) text(msg []byte, newline bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return net.ErrClosed
	}
	n := len(msg)
	if newline {
		n++
	}
	start := len(c.batch)
	b := append(c.batch, 0x80|0x1) // FIN, text
	switch {
	case n <= 125:
		b = append(b, byte(n))
	case n <= 0xffff:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, msg...)
	if newline {
		b = append(b, '\n')
	}
	c.batch = b
	if c.corked {
		return nil
	}
	_, err := c.write(b[start:])
	c.batch = c.batch[:start]
	return err
}

// write writes p under the write deadline; c.mu is held.
func (c *streamConn) write(p []byte) (int, error) {
	if now := time.Now(); !c.cut.Load() && c.deadline.Sub(now) < c.timeout-c.timeout/10 {
		c.deadline = now.Add(c.timeout)
		_ = c.Conn.SetWriteDeadline(c.deadline)
		if c.cut.Load() { // cutOff ran between the check and the set
			_ = c.Conn.SetWriteDeadline(time.Unix(1, 0))
		}
	}
	n, err := c.Conn.Write(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errWriteTimeout
	}
	return n, err
}

// cork holds what is written until flush.
func (c *streamConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// flush writes what was held since cork in one write, and writes through again.
func (c *streamConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.batch) == 0 {
		return nil
	}
	_, err := c.write(c.batch)
	if cap(c.batch) > streamBatchKeep {
		c.batch = nil
	} else {
		c.batch = c.batch[:0]
	}
	return err
}

// cutOff fails the write in progress and every later one, at once: the
// shutdown's grace for writes is over.
func (c *streamConn) cutOff() {
	c.cut.Store(true)
	_ = c.Conn.SetWriteDeadline(time.Unix(1, 0))
}

// streamResponse hands the WebSocket library a streamConn when it hijacks the
// connection.
type streamResponse struct {
	http.ResponseWriter
	timeout time.Duration
	conn    *streamConn
}

func (w *streamResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *streamResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	w.conn = &streamConn{Conn: nc, timeout: w.timeout}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, 4096)), nil
}
