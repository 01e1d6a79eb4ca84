package http

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// socketPeer is the remote address of every connection on the control socket.
// A client's socket is unnamed, which Go renders as "@"; logs and the
// auth.failed audit entry say where the request came from instead.
var socketPeer = &net.UnixAddr{Name: "unix:control.sock", Net: "unix"}

// ControlSocketListener serves the control socket ln (the server half of
// Client's socket way): every connection on it has socketPeer as its remote
// address.
func ControlSocketListener(ln *net.UnixListener) net.Listener { return socketListener{ln} }

// socketListener gives every connection on the control socket socketPeer as its
// remote address.
type socketListener struct{ *net.UnixListener }

func (l socketListener) Accept() (net.Conn, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return socketConn{c}, nil
}

// socketConn embeds the *net.UnixConn so that its CloseWrite, which net/http
// uses for a graceful close, stays visible.
type socketConn struct{ *net.UnixConn }

func (socketConn) RemoteAddr() net.Addr { return socketPeer }

// MergedListener accepts from several listeners as one, so that one
// http.Server serves the TCP listener and the control socket alike. Its Addr is
// the first listener's.
type MergedListener struct {
	lns   []net.Listener
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
	err   error
}

// MergeListeners accepts from every one of lns until Close.
func MergeListeners(lns ...net.Listener) *MergedListener {
	m := &MergedListener{lns: lns, conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{})}
	for _, ln := range lns {
		go m.acceptLoop(ln)
	}
	return m
}

// acceptLoop hands ln's connections and errors to Accept, one at a time: after
// an error it accepts again only once Accept has returned that error, so a
// server that backs off after a temporary error (EMFILE) backs this loop off
// too. It ends when ln is closed.
func (m *MergedListener) acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case m.errs <- err:
				continue
			case <-m.done:
				return
			}
		}
		select {
		case m.conns <- c:
		case <-m.done:
			c.Close()
			return
		}
	}
}

func (m *MergedListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case err := <-m.errs:
		return nil, err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close closes every listener; it may be called more than once.
func (m *MergedListener) Close() error {
	m.once.Do(func() {
		close(m.done)
		var errs []error
		for _, ln := range m.lns {
			if err := ln.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s listener %s: %w", ln.Addr().Network(), ln.Addr(), err))
			}
		}
		m.err = errors.Join(errs...)
	})
	return m.err
}

func (m *MergedListener) Addr() net.Addr { return m.lns[0].Addr() }
