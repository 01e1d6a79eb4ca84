package unixsock

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var quiet = slog.New(slog.DiscardHandler)

// TestListen: the socket is 0600, a stale one is replaced, Close removes it,
// and anything else at the path is left alone.
func TestListen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false) // as a killed node leaves it
	stale.Close()

	ln, err := Listen(path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v, want mode 0600", fi, err)
	}
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket after Close: %v", err)
	}

	if _, err := Dial(context.Background(), path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Dial of no socket: %v, want fs.ErrNotExist", err)
	}
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Dial of a file: %v, want fs.ErrNotExist", err)
	}
	if _, err := Listen(path, quiet); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Errorf("the file at the path became %q", b)
	}
	if _, err := Listen(filepath.Join(dir, strings.Repeat("d", MaxPath)), quiet); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("Listen on too long a path: %v", err)
	}
}
