package http

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Concurrent connections are capped (Options.MaxConns; docs/limits.md). Past
// the cap a new connection is not left in the kernel's accept queue, where its
// client would wait without a word until it gave up: it is accepted and
// answered at once with 503 too_many_connections and Retry-After: 1, then
// closed. A connection holds its slot from accept to close, kept-alive idle
// time and a WebSocket stream's hijacked life included.
//
// Connections on unix sockets (the control socket, which only the node's own
// user can open) are counted apart, against a cap of the same size, so that
// a flood over TCP never locks the operator's CLI out of the node.
const (
	// DefaultMaxConns is the default of Options.MaxConns. Each connection
	// holds a file descriptor, a goroutine and its buffers (a few KiB idle);
	// 4096 is far above what a local node's clients keep open (civnode bench:
	// 64 clients and 100 streams), and under the descriptor limit of common
	// hosts, to which Go raises its own soft limit on Linux.
	DefaultMaxConns = 4096

	// connRefuseTime bounds how long one refused connection is handled: the
	// node reads what the client sends of its request (so that the answer is
	// not a reply to nothing, which clients discard), answers, and reads on
	// until the client closes, so that unread bytes do not turn the close into
	// a reset that could destroy the answer in flight.
	connRefuseTime = 2 * time.Second
	// connRefuseRead bounds what is read of a refused connection's request.
	connRefuseRead = 64 << 10
	// maxRefusing bounds the refusals handled at once. Past it, in a flood,
	// a connection over the cap is closed at once without an answer.
	maxRefusing = 128
)

// connLimitListener caps the connections its listener hands out that are
// open at once; see above.
type connLimitListener struct {
	net.Listener
	tcp, unix *connPool
	refusing  chan struct{} // a slot per refusal in progress
	answer    []byte        // the whole HTTP response to a refused connection
	// refused, if set, is called once a refused connection is closed (tests).
	refused func()
}

// connPool counts the open connections of one kind against max.
type connPool struct {
	max  int64
	open atomic.Int64
}

func (p *connPool) acquire() bool {
	if p.open.Add(1) > p.max {
		p.open.Add(-1)
		return false
	}
	return true
}

func (p *connPool) release() { p.open.Add(-1) }

// limitConns wraps ln so that at most maxConns connections of each kind are
// open at once.
func limitConns(ln net.Listener, maxConns int) *connLimitListener {
	return &connLimitListener{
		Listener: ln,
		tcp:      &connPool{max: int64(maxConns)},
		unix:     &connPool{max: int64(maxConns)},
		refusing: make(chan struct{}, maxRefusing),
		answer:   refusalResponse(),
	}
}

// Accept returns the next connection within the cap; those over it are
// answered and closed on the side, and Accept waits for the next.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		pool := l.tcp
		if a := c.LocalAddr(); a != nil && a.Network() == "unix" {
			pool = l.unix
		}
		if pool.acquire() {
			return &limitedConn{Conn: c, pool: pool}, nil
		}
		select {
		case l.refusing <- struct{}{}:
			go l.refuse(c)
		default:
			c.Close()
			l.noteRefused()
		}
	}
}

// refuse answers a connection over the cap with errTooManyConnections and
// closes it, within connRefuseTime.
func (l *connLimitListener) refuse(c net.Conn) {
	defer func() { <-l.refusing }()
	defer l.noteRefused()
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(connRefuseTime))
	readRequestHead(c)
	if _, err := c.Write(l.answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, connRefuseRead))
}

func (l *connLimitListener) noteRefused() {
	if l.refused != nil {
		l.refused()
	}
}

// readRequestHead reads from c until the blank line that ends a request's
// header, an error (the deadline), or connRefuseRead bytes.
func readRequestHead(c net.Conn) {
	buf := make([]byte, 4<<10)
	var last [3]byte // the end of what was read before, for a blank line split between reads
	for total := 0; total < connRefuseRead; {
		n, err := c.Read(buf)
		total += n
		joined := append(last[:], buf[:n]...)
		if bytes.Contains(joined, []byte("\r\n\r\n")) || err != nil {
			return
		}
		copy(last[:], joined[len(joined)-3:])
	}
}

// refusalResponse is the HTTP/1.1 answer to a connection over the cap, in the
// error shape of every other answer.
func refusalResponse() []byte {
	_, body, _ := errorResponse(errTooManyConnections)
	b, err := marshalJSON(body)
	if err != nil { // cannot happen for strings; keep the status regardless, as writeError does
		b = []byte(`{"error":"too many connections","code":"too_many_connections"}` + "\n")
	}
	var out bytes.Buffer
	// The default headers of every answer (secheaders.go), which this one,
	// written before any request is read, does not pass through.
	out.WriteString("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Security-Policy: " + defaultCSP +
		"\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n" +
		"Cache-Control: no-store\r\nRetry-After: " + retryAfter(errTooManyConnections.RetryAfter) +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n")
	out.Write(b)
	return out.Bytes()
}

// limitedConn gives its slot back when it is first closed.
type limitedConn struct {
	net.Conn
	pool *connPool
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.pool.release)
	return err
}
