package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/internal/testtool"
)

// TestBehindCaddy runs docs/deploying.md's Caddy recipe with Debian's caddy,
// its automatic HTTPS replaced by Caddy's own local CA (tls internal).
func TestBehindCaddy(t *testing.T) {
	testProxyRecipe(t, proxyRecipe{heading: "### Behind Caddy", fence: "caddyfile", start: startCaddy})
}

// startCaddy serves the recipe's site block as node.test and localhost on
// port, with Caddy's state (its local CA among it) in a directory of the
// test's, and returns the CA's root certificate.
func startCaddy(t *testing.T, block string, port int, _ string) string {
	t.Helper()
	caddy := testtool.Need(t, "caddy", "apt-get install caddy")
	dir := t.TempDir()
	site := fmt.Sprintf("https://node.test:%d, https://localhost:%d {\n\tbind 127.0.0.1\n\ttls internal", port, port)
	if !strings.Contains(block, "node.example.com {") {
		t.Fatalf("the Caddy recipe has no node.example.com site:\n%s", block)
	}
	config := fmt.Sprintf("{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\tstorage file_system %s\n}\n\n", filepath.Join(dir, "data")) +
		strings.Replace(block, "node.example.com {", site, 1)
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", caddyfile, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	out := &syncBuffer{}
	startProxyProcess(t, cmd, out)
	root := filepath.Join(dir, "data", "pki", "authorities", "local", "root.crt")
	waitFor(t, "Caddy's local CA", func() (bool, string) {
		_, err := os.Stat(root)
		return err == nil, out.String()
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("caddy's output:\n%s", out)
		}
	})
	return root
}
