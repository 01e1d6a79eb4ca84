package main

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNotifyServiceManagerModes runs the civnode binary as systemd runs a
// unit of Type=notify, with $NOTIFY_SOCKET naming a datagram socket, in
// both of serve's modes: a node of its own, and a mirror (serve --mirror-of
// a running node). In each the service manager hears READY=1 with the
// address once the node serves, and STOPPING=1 once SIGTERM stops it, and
// the process exits 0.
func TestNotifyServiceManagerModes(t *testing.T) {
	needBinary(t)
	for _, tc := range []struct {
		name  string
		flags func(t *testing.T) []string
	}{
		{"serve", func(*testing.T) []string { return nil }},
		{"mirror", func(t *testing.T) []string {
			n := startNode(t, filepath.Join(t.TempDir(), "origin"))
			return []string{"--mirror-of", n.url, "--mirror-token", n.token, "--mirror-interval", "100ms"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "notify.sock")
			notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer notify.Close()
			// The subprocess inherits the test's environment; the in-process
			// origin reads none (testMain).
			t.Setenv(notifyEnv, sock)
			p := startProcess(t, filepath.Join(t.TempDir(), "node"), tc.flags(t)...)
			read := func() string {
				t.Helper()
				notify.SetReadDeadline(time.Now().Add(waitTimeout))
				buf := make([]byte, 512)
				n, err := notify.Read(buf)
				if err != nil {
					t.Fatalf("notify socket: %v\nstderr:\n%s", err, p.stderr)
				}
				return string(buf[:n])
			}
			if got, want := read(), "READY=1\nSTATUS=serving on "+strings.TrimPrefix(p.url, "http://"); got != want {
				t.Errorf("first notice %q, want %q", got, want)
			}
			p.signal(t, syscall.SIGTERM)
			if got := read(); got != "STOPPING=1" {
				t.Errorf("notice %q, want STOPPING=1", got)
			}
			if code := p.wait(t); code != 0 {
				t.Fatalf("civnode serve %s exited with %d\nstderr:\n%s", tc.name, code, p.stderr)
			}
		})
	}
}
