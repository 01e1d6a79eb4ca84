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

// maxSocketPath is the longest path a unix socket can have on Linux: sockaddr_un
// holds 108 bytes, the terminating NUL included.
const maxSocketPath = 107

// socketPeer is the remote address of every connection on the control socket.
// A client's socket is unnamed, which Go renders as "@"; logs and the
// auth.failed audit entry say where the request came from instead.
var socketPeer = &net.UnixAddr{Name: "unix:control.sock", Net: "unix"}

// listenControlSocket listens on the control socket at path (listenPrivateSocket),
// or returns nil, with a warning, when the node must run without one; the CLI
// then reaches the node over TCP, where the node proves itself first.
func listenControlSocket(path string, logger *slog.Logger) net.Listener {
	ln, err := listenPrivateSocket(path, logger)
	if err != nil {
		logger.Warn("serving without the control socket, so the CLI reaches the node over TCP at --addr",
			"path", path, "err", err)
		return nil
	}
	logger.Info("listening on the control socket", "path", path)
	return socketListener{ln}
}

// listenPrivateSocket listens on a unix socket at path with mode 0600, which
// Close removes: the node's sockets in the data dir (control.sock,
// oracle.sock). The caller holds the data dir's database lock, so no other
// node runs on the dir and a socket already at path is a stale one, left by a
// node that was killed; it is replaced. Anything else at path is not the
// node's to delete.
func listenPrivateSocket(path string, logger *slog.Logger) (*net.UnixListener, error) {
	name := filepath.Base(path)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("the path of %s is too long for a unix socket (%d bytes, at most %d)", name, len(path), maxSocketPath)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("inspect %s: %w", name, err)
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("%s exists and is not a socket (mode %s)", name, fi.Mode())
	default:
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale %s: %w", name, err)
		}
		logger.Info("replaced a stale socket", "path", path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", name, err)
	}
	// The data dir is 0700, so the moment before the chmod is not a window for
	// others; 0600 keeps the socket private where the dir is not.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("make %s private: %w", name, err)
	}
	// Close removes the socket file, so a clean stop leaves none behind.
	ln.SetUnlinkOnClose(true)
	return ln, nil
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
