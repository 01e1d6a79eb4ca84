package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// The serve side of the CLI's channel to a running node (nodechannel.go): the
// control socket in the data dir, served beside the TCP listener.

func (d dataDir) socketPath() string { return filepath.Join(string(d), "control.sock") }

// maxSocketPath is the longest path a unix socket can have on Linux: sockaddr_un
// holds 108 bytes, the terminating NUL included.
const maxSocketPath = 107

// socketPeer is the remote address of every connection on the control socket.
// A client's socket is unnamed, which Go renders as "@"; logs and the
// auth.failed audit entry say where the request came from instead.
var socketPeer = &net.UnixAddr{Name: "unix:control.sock", Net: "unix"}

// listenControlSocket listens on the control socket at path with mode 0600, or
// returns nil, with a warning, when the node must run without one; the CLI then
// reaches the node over TCP, where the node proves itself first. The caller
// holds the data dir's database lock, so no other node runs on the dir and a
// socket already at path is a stale one, left by a node that was killed.
func listenControlSocket(path string, logger *slog.Logger) net.Listener {
	without := func(reason string, args ...any) net.Listener {
		logger.Warn(reason+"; serving without the control socket, so the CLI reaches the node over TCP at --addr",
			append([]any{"path", path}, args...)...)
		return nil
	}
	if len(path) > maxSocketPath {
		return without(fmt.Sprintf("the control socket path is too long for a unix socket (%d bytes, at most %d)", len(path), maxSocketPath))
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return without("cannot inspect control.sock", "err", err)
	case fi.Mode().Type() != fs.ModeSocket:
		// Not something a node made: it is not the node's to delete.
		return without("control.sock exists and is not a socket", "mode", fi.Mode().String())
	default:
		if err := os.Remove(path); err != nil {
			return without("cannot remove the stale control socket", "err", err)
		}
		logger.Info("replaced a stale control socket", "path", path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return without("cannot listen on the control socket", "err", err)
	}
	// The data dir is 0700, so the moment before the chmod is not a window for
	// others; 0600 keeps the socket private where the dir is not.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return without("cannot make the control socket private", "err", err)
	}
	// Close removes the socket file, so a clean stop leaves none behind.
	ln.SetUnlinkOnClose(true)
	logger.Info("listening on the control socket", "path", path)
	return socketListener{ln}
}

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

// mergedListener accepts from several listeners as one, so that one
// http.Server serves the TCP listener and the control socket alike. Its Addr is
// the first listener's.
type mergedListener struct {
	lns   []net.Listener
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
	err   error
}

func mergeListeners(lns ...net.Listener) *mergedListener {
	m := &mergedListener{lns: lns, conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{})}
	for _, ln := range lns {
		go m.acceptLoop(ln)
	}
	return m
}

// acceptLoop hands ln's connections and errors to Accept, one at a time: after
// an error it accepts again only once Accept has returned that error, so a
// server that backs off after a temporary error (EMFILE) backs this loop off
// too. It ends when ln is closed.
func (m *mergedListener) acceptLoop(ln net.Listener) {
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

func (m *mergedListener) Accept() (net.Conn, error) {
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
func (m *mergedListener) Close() error {
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

func (m *mergedListener) Addr() net.Addr { return m.lns[0].Addr() }
