package main

import (
	"bufio"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRegistryDevListensOnLoopback runs the real binary: registry-dev
// listens on 127.0.0.1 by default and when --addr leaves the host out, and
// elsewhere only on a host named for it.
func TestRegistryDevListensOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// want says whether host is where it should listen.
		want func(host string) bool
	}{
		{"default", nil, func(h string) bool { return h == "127.0.0.1" }},
		{"no host", []string{"--addr", ":0"}, func(h string) bool { return h == "127.0.0.1" }},
		// Go announces 0.0.0.0 as [::], every interface either way.
		{"every interface named", []string{"--addr", "0.0.0.0:0"}, func(h string) bool { return net.ParseIP(h).IsUnspecified() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, errOut := registryDevHost(t, tc.args...)
			if host == "" && tc.args == nil && strings.Contains(errOut, "address already in use") {
				t.Skip("the default port 7790 is taken on this machine")
			}
			if !tc.want(host) {
				t.Errorf("registry-dev %v listens on host %q\nstderr:\n%s", tc.args, host, errOut)
			}
		})
	}
}

// registryDevHost runs civnode registry-dev with args until it prints its
// listening line, and returns the host of the URL that line announces ("" if
// it exited first) and its stderr.
func registryDevHost(t *testing.T, args ...string) (string, string) {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(civnodeBin, append([]string{"registry-dev"}, args...)...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	defer func() {
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(waitTimeout):
		}
	}()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(waitTimeout):
		t.Fatalf("no listening line within %v\nstderr:\n%s", waitTimeout, stderr)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "civnode registry-dev listening on ")
	if !ok {
		select { // stderr is whole once it has exited
		case <-exited:
		case <-time.After(waitTimeout):
		}
		return "", stderr.String()
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("listening line %q: %v", line, err)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("listening line %q: %v", line, err)
	}
	return host, stderr.String()
}
