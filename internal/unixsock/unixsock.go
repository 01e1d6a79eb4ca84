package unixsock

import (
	"context"
	"errors"
	"fmt"
	"github.com/civnode/civnode/internal/logkey"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"
)

// MaxPath is the longest path a unix socket can have on Linux: sockaddr_un
// holds 108 bytes, the terminating NUL included.
const MaxPath = 107

// dialTimeout bounds the connection to a socket; the node accepts at once.
const dialTimeout = 2 * time.Second

// Listen listens on a unix socket at path with mode 0600, which Close removes.
// A stale socket at path is replaced (logged); anything else at path is an
// error.
func Listen(path string, logger *slog.Logger) (*net.UnixListener, error) {
	name := filepath.Base(path)
	if len(path) > MaxPath {
		return nil, fmt.Errorf("the path of %s is too long for a unix socket (%d bytes, at most %d)", name, len(path), MaxPath)
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
		logger.Info("replaced a stale socket", logkey.Path, path)
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

// Dial connects to the socket at path. A path that is missing, or not a
// socket, is fs.ErrNotExist: no node serves there.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("%s is not a socket: %w", path, fs.ErrNotExist)
	}
	d := net.Dialer{Timeout: dialTimeout}
	return d.DialContext(ctx, "unix", path)
}
