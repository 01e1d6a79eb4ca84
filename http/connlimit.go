package http

import (
	"bytes"
	"container/list"
	"context"
	"io"
	"math"
	"net"
	"net/http"
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
//
// Over TCP, clients without a token cannot hold the cap against those with
// one (docs/limits.md, Connections):
//   - A connection authenticates when one of its requests carries a valid
//     token (admitConn); it stays authenticated for its life.
//   - One client address (an IPv4 address, an IPv6 /64) holds at most
//     MaxConnsPerAddr connections.
//   - A connection that never authenticated waits idle for its next request
//     at most AnonymousIdleTimeout, not the 2 min of the others.
//   - The last tenth of the cap (at least one slot) is a reserve: a new
//     connection that would take the count into it, or its address past its
//     cap, first closes the oldest idle connection that never authenticated
//     (of that address, for the address's cap). If there is none, it is let
//     into the reserve on condition: a request on it without a valid token
//     is answered 503 too_many_connections and the connection closed.
//   - A new connection that finds the cap, or its address's cap, full (with
//     no idle anonymous connection to close) closes the connection open
//     longest that has not yet sent a whole request head, silent or part way
//     (of that address, for the address's cap), and takes its place; in the
//     reserve, on its condition (connfresh.go). Otherwise silent connections,
//     each closed only by the header time-out and opened again, would hold
//     the whole cap, reserve included, since a token is only known once a
//     head is read.
//   - A connection from a trusted proxy (Options.TrustedProxies) carries
//     the requests of many clients, one after another, so its address is
//     not known at accept: it counts against no address until a request's
//     head names its client (admitClient), then against that client's until
//     a request of another client moves it. A request whose client is at its
//     cap (with no idle anonymous connection of its own to close) is
//     answered 503 too_many_connections and the connection closed, as one
//     over the cap would be at accept; a new client on the connection must
//     authenticate anew.
const (
	// DefaultMaxConns is the default of Options.MaxConns. Each connection
	// holds a file descriptor, a goroutine and its buffers (a few KiB idle);
	// 4096 is far above what a local node's clients keep open (civnode bench:
	// 64 clients and 100 streams), and under the descriptor limit of common
	// hosts, to which Go raises its own soft limit on Linux.
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerAddr is the default of Options.MaxConnsPerAddr: a
	// quarter of the default cap, so that no one host (or /64) holds the
	// node, and far above what one host's honest clients keep open
	// (civnode bench, all on loopback: 64 clients and 100 streams; a browser:
	// about 6).
	DefaultMaxConnsPerAddr = DefaultMaxConns / 4
	// defaultAnonymousIdle is the default of Options.AnonymousIdleTimeout:
	// as long as a new connection may take to send its request head
	// (readHeaderTimeout), so that a connection that never authenticated
	// holds its slot idle no longer than a silent one does.
	defaultAnonymousIdle = readHeaderTimeout

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
// open at once, and keeps what the rules above need to know of the TCP ones.
type connLimitListener struct {
	net.Listener
	tcp, unix *connPool
	// reserve is the part of tcp.max kept for connections that authenticate.
	reserve int64
	// perAddr caps the TCP connections of one client address; 0: no cap.
	perAddr int
	// anonIdle is the idle time-out of connections that never
	// authenticated; 0: the server's own.
	anonIdle time.Duration
	// proxies are the trusted proxies, whose connections are counted
	// against their requests' clients.
	proxies  proxyTrust
	refusing chan struct{} // a slot per refusal in progress
	answer   []byte        // the whole HTTP response to a refused connection
	// refused, if set, is called once a refused connection is closed (tests).
	refused func()

	mu sync.Mutex
	// addrs counts the open TCP connections of each client address.
	addrs map[string]int
	// idle lists the idle TCP connections that never authenticated, longest
	// idle first: those closed first to make room.
	idle list.List
	// fresh lists the TCP connections that have not yet sent a whole request
	// head, oldest first: those closed to make room at a full cap.
	fresh list.List
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
// open at once (none when maxConns is 0 or less: the records are still kept).
func limitConns(ln net.Listener, maxConns int) *connLimitListener {
	capacity, reserve := int64(math.MaxInt64), int64(0)
	if maxConns > 0 {
		capacity = int64(maxConns)
		if maxConns > 1 {
			reserve = max(1, capacity/10)
		}
	}
	return &connLimitListener{
		Listener: ln,
		tcp:      &connPool{max: capacity},
		unix:     &connPool{max: capacity},
		reserve:  reserve,
		refusing: make(chan struct{}, maxRefusing),
		answer:   refusalResponse(),
		addrs:    make(map[string]int),
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
		if a := c.LocalAddr(); a != nil && a.Network() == "unix" {
			if l.unix.acquire() {
				return &limitedConn{Conn: c, l: l, pool: l.unix}, nil
			}
		} else if lc := l.admitTCP(c); lc != nil {
			return lc, nil
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

// admitTCP takes a slot for c, closing an idle anonymous connection first if
// c would take its address past its cap or the node into the reserve, and
// else, at a full cap, the oldest fresh connection; nil: c is over a cap.
func (l *connLimitListener) admitTCP(c net.Conn) *limitedConn {
	remote := c.RemoteAddr().String()
	proxied := l.proxies.peerTrusted(remote)
	addr := clientAddress(remote)
	if proxied {
		addr = "" // known once a request names its client
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !proxied && l.perAddr > 0 && l.addrs[addr] >= l.perAddr && !l.evictLocked(addr) && !l.evictFreshLocked(addr) {
		return nil
	}
	if l.tcp.open.Load() >= l.tcp.max-l.reserve {
		l.evictLocked("")
	}
	if l.tcp.open.Load() >= l.tcp.max {
		l.evictFreshLocked("")
	}
	open := l.tcp.open.Load()
	if open >= l.tcp.max {
		return nil
	}
	l.tcp.open.Add(1)
	if !proxied {
		l.addrs[addr]++
	}
	lc := &limitedConn{Conn: c, l: l, pool: l.tcp, tcp: true, addr: addr, proxied: proxied, reserve: open >= l.tcp.max-l.reserve}
	lc.headPending.Store(true)
	lc.fresh = l.fresh.PushBack(lc)
	return lc
}

// evictLocked closes the longest idle connection that never authenticated,
// of addr if it is not "", and reports whether there was one. A connection
// on which bytes of a next request have arrived is not idle any more, though
// net/http has not said so yet.
func (l *connLimitListener) evictLocked(addr string) bool {
	for e := l.idle.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitedConn)
		if addr != "" && c.addr != addr || c.reads.Load() != c.idleReads {
			continue
		}
		l.releaseLocked(c)
		c.Conn.Close()
		return true
	}
	return false
}

// idleAnonymous is how many connections that never authenticated are idle,
// the ones closed first to make room.
func (l *connLimitListener) idleAnonymous() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
}

// releaseLocked gives c's slot back, once.
func (l *connLimitListener) releaseLocked(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	c.pool.release()
	if c.tcp {
		l.leaveIdleLocked(c)
		l.leaveFreshLocked(c)
		l.leaveAddrLocked(c)
	}
}

// leaveAddrLocked stops counting c against its address.
func (l *connLimitListener) leaveAddrLocked(c *limitedConn) {
	if c.proxied && c.addr == "" {
		return // no request has named its client yet
	}
	if l.addrs[c.addr]--; l.addrs[c.addr] <= 0 {
		delete(l.addrs, c.addr)
	}
	if c.proxied {
		c.addr = ""
	}
}

// admitClient counts a connection from a trusted proxy against the client
// of the request it carries, client (clientAddress), and reports whether the
// client is within its cap. A client at its cap may have one of its own idle
// anonymous connections closed to make room. On a connection that changes
// clients the new one has not authenticated.
func (l *connLimitListener) admitClient(c *limitedConn, client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return false
	}
	if c.addr == client {
		return true
	}
	if l.perAddr > 0 && l.addrs[client] >= l.perAddr && !l.evictLocked(client) {
		return false
	}
	l.leaveAddrLocked(c)
	c.addr = client
	l.addrs[client]++
	c.authenticated.Store(false)
	return true
}

// leaveIdleLocked takes c off the idle list and stops its idle timer.
func (l *connLimitListener) leaveIdleLocked(c *limitedConn) {
	if c.idle != nil {
		l.idle.Remove(c.idle)
		c.idle = nil
	}
	if c.idleTimer != nil {
		c.idleTimer.Stop()
		c.idleTimer = nil
	}
}

// connState is the http.Server's ConnState hook: a TCP connection that never
// authenticated is listed while idle, and closed after anonIdle of it.
// Hijacked (WebSocket) and closed connections leave the list for good. Any
// state after the first means net/http has read a request head (or given up
// on one): the connection is not fresh any more, if Read has not seen so.
func (l *connLimitListener) connState(nc net.Conn, st http.ConnState) {
	c := asLimitedConn(nc)
	// An authenticated connection is never listed: it authenticated during
	// a request, after it last left the list.
	if c == nil || !c.tcp || c.authenticated.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaveIdleLocked(c)
	if st != http.StateNew {
		l.leaveFreshLocked(c)
	}
	if st != http.StateIdle || c.released || c.authenticated.Load() {
		return
	}
	c.idleReads = c.reads.Load()
	c.idle = l.idle.PushBack(c)
	if l.anonIdle > 0 {
		el := c.idle
		c.idleTimer = time.AfterFunc(l.anonIdle, func() { l.expire(c, el) })
	}
}

// expire closes c if it is still in the idle period el began and no byte of
// a next request has arrived.
func (l *connLimitListener) expire(c *limitedConn, el *list.Element) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.idle != el || c.reads.Load() != c.idleReads {
		return
	}
	l.releaseLocked(c)
	c.Conn.Close()
}

type connKey struct{}

// connContext is the http.Server's ConnContext hook: a request's context
// carries its TCP connection's record, for admitConn.
func (l *connLimitListener) connContext(ctx context.Context, nc net.Conn) context.Context {
	if c := asLimitedConn(nc); c != nil && c.tcp {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// asLimitedConn finds the *limitedConn under the wrappers of a served conn.
func asLimitedConn(c net.Conn) *limitedConn {
	for {
		switch v := c.(type) {
		case *limitedConn:
			return v
		case jsonErrorConn:
			c = v.Conn
		default:
			return nil
		}
	}
}

// admitConn marks a TCP connection authenticated once a request on it
// carries a valid token, and answers a request without one on a connection
// let into the reserve 503 too_many_connections, closing it.
func (s *Server) admitConn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*limitedConn)
		if c != nil && c.proxied && !c.l.admitClient(c, clientAddress(s.clientAddr(r))) {
			w.Header().Set("Connection", "close")
			s.writeError(w, r, errTooManyConnections)
			return
		}
		if c == nil || c.authenticated.Load() {
			next.ServeHTTP(w, r)
			return
		}
		presented, valid := s.carriesValidToken(r)
		if valid {
			c.authenticated.Store(true)
		}
		if valid || !c.reserve {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		// Guesses in the reserve are counted as anywhere else.
		if s.refuseFailingAddress(w, r) {
			return
		}
		if presented {
			s.noteAuthFailure(r)
		}
		s.writeError(w, r, errTooManyConnections)
	})
}

// carriesValidToken reports whether r presents a bearer token, in its
// Authorization header or as the stream's ?token=, and whether it is valid.
// Which routes take which form is requireAuth's business; here any valid
// token proves the client holds one.
func (s *Server) carriesValidToken(r *http.Request) (presented, valid bool) {
	switch h := r.Header.Values("Authorization"); len(h) {
	case 0:
	case 1:
		_, ok := s.auth.authenticate(r)
		return true, ok
	default:
		return true, false
	}
	token, _, found := cutQueryToken(r.URL.RawQuery)
	if !found || token == "" {
		return false, false
	}
	_, ok := s.auth.authenticate(&http.Request{Header: http.Header{"Authorization": {"Bearer " + token}}})
	return true, ok
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

// limitedConn gives its slot back when it is first closed. A TCP one
// carries the record of the rules above.
type limitedConn struct {
	net.Conn
	l    *connLimitListener
	pool *connPool
	tcp  bool
	addr string // clientAddress of the peer (TCP); of its last request's client if proxied
	// proxied: from a trusted proxy; addr is "" until a request names its
	// client (admitClient).
	proxied bool
	// reserve: let into the reserve; its requests need a valid token.
	reserve       bool
	authenticated atomic.Bool
	// reads counts the reads that returned bytes, so that a connection a
	// next request is arriving on is not taken for idle.
	reads atomic.Uint64
	// headPending: TCP, and the end of the first request head not read yet.
	headPending atomic.Bool
	head        headScan // used by the reading goroutine while headPending

	// Guarded by l.mu.
	released  bool
	idle      *list.Element // in l.idle while idle and anonymous
	idleReads uint64        // reads when it went idle
	idleTimer *time.Timer
	fresh     *list.Element // in l.fresh until its first head is read
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
		if c.headPending.Load() && c.head.ends(p[:n]) && !c.l.headRead(c) {
			return 0, net.ErrClosed
		}
	}
	return n, err
}

func (c *limitedConn) Close() error {
	// The slot first: a client that reads the close and dials again at once
	// (after a 503 that closed the connection, say) must find it free.
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
