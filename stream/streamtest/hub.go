package streamtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Hub is a nats-server process listening on loopback for clients and leaf
// nodes: the existing NATS server that a node joins with --nats-leaf.
type Hub struct {
	// ClientURL is where a NATS client connects; LeafURL is where a leaf node
	// (the node's --nats-leaf) connects.
	ClientURL, LeafURL string

	t       testing.TB
	bin     string
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	ports   string // "port: P" and the leafnodes block, once known
	logPath string
}

// BuildServer builds the nats-server command of the module's nats-server
// version into dir and returns its path. The go command caches the build.
// Under go test -short (the inner loop, which builds no binary) it skips the
// test instead.
func BuildServer(t testing.TB, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds and runs a nats-server process; the full suite runs it")
	}
	bin := filepath.Join(dir, "nats-server")
	out, err := exec.Command(goTool(), "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	return bin
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// StartHub builds nats-server and starts it on free loopback ports. It is
// stopped when the test ends.
func StartHub(t testing.TB) *Hub {
	t.Helper()
	dir := t.TempDir()
	h := &Hub{t: t, bin: BuildServer(t, dir), dir: dir}
	h.start("host: 127.0.0.1\nport: -1\nleafnodes { host: 127.0.0.1, port: -1 }\n")
	t.Cleanup(h.Stop)
	return h
}

// StartTLSHub is StartHub with TLS on the leaf node port, serving the
// certificate and key in the PEM files certFile and keyFile; its LeafURL is
// tls://localhost:PORT, the name a loopback test certificate holds.
func StartTLSHub(t testing.TB, certFile, keyFile string) *Hub {
	t.Helper()
	dir := t.TempDir()
	h := &Hub{t: t, bin: BuildServer(t, dir), dir: dir}
	h.start(fmt.Sprintf("host: 127.0.0.1\nport: -1\nleafnodes { host: 127.0.0.1, port: -1, tls { cert_file: %q, key_file: %q } }\n",
		certFile, keyFile))
	h.LeafURL = "tls://localhost:" + portOf(h.LeafURL)
	t.Cleanup(h.Stop)
	return h
}

var (
	clientLine = regexp.MustCompile(`Listening for client connections on (\S+)`)
	leafLine   = regexp.MustCompile(`Listening for leafnode connections on (\S+)`)
)

// start runs the server with config and waits for its two listeners, which
// it learns from its log (a port of -1 is chosen by the server).
func (h *Hub) start(config string) {
	h.t.Helper()
	conf := filepath.Join(h.dir, "hub.conf")
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(h.bin, "-c", conf)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("start nats-server: %v", err)
	}
	h.cmd, h.exited = cmd, make(chan struct{})
	found := make(chan [2]string, 1)
	go func() {
		var client, leaf string
		var log strings.Builder
		reported := false
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := clientLine.FindStringSubmatch(line); m != nil {
				client = m[1]
			}
			if m := leafLine.FindStringSubmatch(line); m != nil {
				leaf = m[1]
			}
			if client != "" && leaf != "" && !reported {
				found <- [2]string{client, leaf}
				reported = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		_ = os.WriteFile(filepath.Join(h.dir, "hub.log"), []byte(log.String()), 0o600)
		close(h.exited)
	}()
	select {
	case a := <-found:
		h.ClientURL, h.LeafURL = "nats://"+a[0], "nats://"+a[1]
		h.ports = fmt.Sprintf("host: 127.0.0.1\nport: %s\nleafnodes { host: 127.0.0.1, port: %s }\n",
			portOf(a[0]), portOf(a[1]))
	case <-h.exited:
		log, _ := os.ReadFile(filepath.Join(h.dir, "hub.log"))
		h.t.Fatalf("nats-server exited before listening:\n%s", log)
	case <-time.After(30 * time.Second):
		h.Stop()
		h.t.Fatal("nats-server did not listen within 30s")
	}
}

func portOf(hostport string) string {
	return hostport[strings.LastIndexByte(hostport, ':')+1:]
}

// Stop kills the server and waits for it to exit. It is safe to call twice.
func (h *Hub) Stop() {
	if h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Kill()
	<-h.exited
	h.cmd = nil
}

// Restart starts the stopped server again on the same ports, so that a leaf
// node redialling its URL finds it.
func (h *Hub) Restart() {
	h.t.Helper()
	h.start(h.ports)
}
