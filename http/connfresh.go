package http

import "bytes"

// A TCP connection is fresh from accept until its first request head has been
// read whole: it has sent nothing yet, or part of a head. Fresh connections are
// what a client without a token can hold the cap with at no cost but a socket
// (for up to readHeaderTimeout each, again and again), and what a client with a
// token needs a slot for: its token is only known once its head is read. So
// when a new connection finds the cap, or its address's cap, full, the fresh
// connection open longest (of the same address, for the address's cap) is
// closed without a word to admit it (connLimitListener.admitTCP). The new one
// then gets the same chance to send its head, and a client that sends its head
// at once (as every ordinary one does) is past this rule before a flood can
// open enough connections to make it the oldest.
//
// A connection whose head has been read is never closed this way, whether its
// body is still arriving or its handler running: that is work in progress,
// bounded by the body and handler time-outs, and once it is idle it falls under
// the rules for idle connections.

// evictFreshLocked closes the fresh connection open longest, of addr if it is
// not "", and reports whether there was one.
func (l *connLimitListener) evictFreshLocked(addr string) bool {
	for e := l.fresh.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitedConn)
		if addr != "" && c.addr != addr {
			continue
		}
		l.releaseLocked(c)
		c.Conn.Close()
		return true
	}
	return false
}

// leaveFreshLocked takes c off the fresh list for good.
func (l *connLimitListener) leaveFreshLocked(c *limitedConn) {
	c.headPending.Store(false)
	if c.fresh != nil {
		l.fresh.Remove(c.fresh)
		c.fresh = nil
	}
}

// headRead takes c off the fresh list once the end of its first request head
// has been read, before net/http sees it (net/http's own word, the ConnState
// hook, comes only after the head is parsed, too late to keep an eviction from
// closing a connection whose handler is about to run). False: c was closed to
// make room first, and the head must not be handed on to run on a closed
// connection.
func (l *connLimitListener) headRead(c *limitedConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return false
	}
	l.leaveFreshLocked(c)
	return true
}

// headScan finds the end of a request head in the bytes read from a
// connection, read by read: the first empty line, whether lines end in CRLF
// or, as net/http also accepts, in a bare LF. Only the goroutine reading the
// connection uses it.
type headScan struct {
	tail [2]byte // the last bytes read before, for an empty line split between reads
	n    int     // how many of tail are set
}

// ends reports whether b, read after what the scan has seen, ends the head.
// A head that starts with an empty line is malformed, and net/http refuses it
// and closes the connection; ending the scan early there costs nothing.
func (h *headScan) ends(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	var edge [4]byte
	k := copy(edge[:], h.tail[:h.n])
	k += copy(edge[k:], b[:min(len(b), 2)])
	if hasEmptyLine(edge[:k]) || hasEmptyLine(b) {
		return true
	}
	switch {
	case len(b) >= 2:
		h.tail, h.n = [2]byte{b[len(b)-2], b[len(b)-1]}, 2
	case h.n == 0:
		h.tail[0], h.n = b[0], 1
	default:
		h.tail, h.n = [2]byte{h.tail[h.n-1], b[0]}, 2
	}
	return false
}

// hasEmptyLine reports whether b holds a line break followed by an empty line.
func hasEmptyLine(b []byte) bool {
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\n\r\n"))
}
