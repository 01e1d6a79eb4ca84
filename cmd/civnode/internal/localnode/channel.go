package localnode

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/internal/unixsock"
)

// The CLI's way to the API of the node running on a data dir, with the owner
// token of that dir: civhttp.Client, which sends the token only over
// connections that reach the node of the data dir. This file decides which:
// the control socket in the data dir, else TCP at --addr after the node has
// proved, on each connection, that it holds the data dir's node.key. The token
// commands use it, and so does every command that acts on a running node as
// its owner (wallet, transparency, doctor).

// AddrError is an --addr that names no HOST:PORT: a mistake on the command
// line, met only when the control socket cannot be reached.
type AddrError struct {
	Addr string
	Err  error
}

func (e *AddrError) Error() string { return fmt.Sprintf("--addr %q: %v", e.Addr, e.Err) }
func (e *AddrError) Unwrap() error { return e.Err }

// tcpDialTimeout bounds the TCP dial of the node at --addr; the proof has its
// own bound.
const tcpDialTimeout = 10 * time.Second

// Dial opens the channel to the node running on dir. addr is the
// node's TCP address (--addr), used only when the control socket cannot be
// reached. The caller closes the channel.
//
// addr may be an https:// URL of a node that serves HTTPS (serve
// --tls-cert): the connection is then TLS, verified against the system's
// roots and those of WithCAFile, and the node proves itself inside it.
func Dial(ctx context.Context, dir datadir.Dir, addr string, logger *slog.Logger, opts ...DialOption) (*civhttp.Client, error) {
	var o dialOptions
	for _, opt := range opts {
		opt(&o)
	}
	token, err := datadir.LoadControlToken(dir.TokenPath(), logger)
	if err != nil {
		return nil, fmt.Errorf("%w (%s), but its owner token cannot be read: %w", datadir.ErrInUse, dir, err)
	}
	if conn, err := unixsock.Dial(ctx, dir.SocketPath()); err == nil {
		logger.Debug("reaching the node through its control socket", logkey.Path, dir.SocketPath())
		path := dir.SocketPath()
		return civhttp.NewClient("http://localhost", token, path, conn, func(ctx context.Context) (net.Conn, error) {
			return unixsock.Dial(ctx, path)
		}), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		logger.Debug("control socket unreachable; trying TCP", logkey.Path, dir.SocketPath(), logkey.Err, err)
	}

	host, https, err := splitAddr(addr)
	if err != nil {
		return nil, &AddrError{Addr: addr, Err: err}
	}
	var tlsConfig *tls.Config
	if https {
		if tlsConfig, err = channelTLS(host, o.caFile); err != nil {
			return nil, err
		}
	}
	key, err := datadir.LoadNodeKey(dir.KeyPath(), logger)
	if err != nil {
		return nil, fmt.Errorf("%w (%s), but its node.key, which checks the node at %s, cannot be read: %w", datadir.ErrInUse, dir, host, err)
	}
	pub := key.Public().(ed25519.PublicKey)
	dial := func(ctx context.Context) (net.Conn, error) {
		return dialProven(ctx, dir, host, pub, tlsConfig)
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	logger.Debug("the node at --addr proved it holds node.key", logkey.Addr, host)
	return civhttp.NewClient("http://"+host, token, host, conn, dial), nil
}

// DialOption adjusts Dial.
type DialOption func(*dialOptions)

type dialOptions struct {
	caFile string
}

// WithCAFile has Dial trust the CA certificates of the PEM bundle caFile
// (--ca-file), besides the system's, for an https:// --addr (ClientTLS).
func WithCAFile(caFile string) DialOption {
	return func(o *dialOptions) { o.caFile = caFile }
}

// HostPort turns --addr, which may be given as an http:// or https:// URL,
// into HOST:PORT, and says whether it is an https:// one.
func HostPort(addr string) (host string, https bool, err error) {
	return splitAddr(addr)
}

// splitAddr turns --addr into HOST:PORT, and says whether it is an https://
// URL.
func splitAddr(addr string) (host string, https bool, err error) {
	a := strings.TrimSuffix(addr, "/")
	if rest, ok := strings.CutPrefix(a, "https://"); ok {
		a, https = rest, true
	} else {
		a = strings.TrimPrefix(a, "http://")
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return "", false, fmt.Errorf("want HOST:PORT, http://HOST:PORT or https://HOST:PORT: %w", err)
	}
	return a, https, nil
}

// channelTLS is the TLS configuration of the channel to the node at host
// (HOST:PORT): ClientTLS's roots, that host's name, and HTTP/1.1, which the
// channel speaks on the connections it hands the client.
func channelTLS(host, caFile string) (*tls.Config, error) {
	c, err := ClientTLS(caFile)
	if err != nil {
		return nil, err
	}
	if c == nil {
		c = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		return nil, err
	}
	c.ServerName, c.NextProtos = name, []string{"http/1.1"}
	return c, nil
}

// DialProven dials the node at addr and has it prove, on that connection,
// that it holds the private key of pub (civhttp.ProveNode). It returns the
// connection only then.
func DialProven(ctx context.Context, dir datadir.Dir, addr string, pub ed25519.PublicKey) (net.Conn, error) {
	return dialProven(ctx, dir, addr, pub, nil)
}

// dialProven is DialProven, inside TLS as tlsConfig says when it is not nil.
func dialProven(ctx context.Context, dir datadir.Dir, addr string, pub ed25519.PublicKey, tlsConfig *tls.Config) (net.Conn, error) {
	d := net.Dialer{Timeout: tcpDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w, but no node answers at %s (give its address with --addr): %w", datadir.ErrInUse, addr, err)
	}
	if tlsConfig != nil {
		tc := tls.Client(conn, tlsConfig)
		hctx, cancel := context.WithTimeout(ctx, tcpDialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("%w, but TLS with the node at %s failed (give its CA with --ca-file): %w", datadir.ErrInUse, addr, err)
		}
		conn = tc
	}
	if err := civhttp.ProveNode(ctx, conn, addr, pub); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the process at %s is not the node of %s: it %w (%w)", addr, dir, ErrUnproven, err)
	}
	return conn, nil
}

// listenControlSocket listens on the control socket at path, or returns nil,
// with a warning, when the node must run without one; the CLI then reaches
// the node over TCP, where the node proves itself first.
func listenControlSocket(path string, logger *slog.Logger) net.Listener {
	ln, err := unixsock.Listen(path, logger)
	if err != nil {
		logger.Warn("serving without the control socket, so the CLI reaches the node over TCP at --addr",
			logkey.Path, path, logkey.Err, err)
		return nil
	}
	logger.Info("listening on the control socket", logkey.Path, path)
	return civhttp.ControlSocketListener(ln)
}
