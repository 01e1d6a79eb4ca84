package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/internal/testcert"
	"github.com/civnode/civnode/internal/testtool"
)

// TestBehindNginx runs docs/deploying.md's nginx recipe with Debian's nginx,
// serving a certificate of a test CA.
func TestBehindNginx(t *testing.T) {
	testProxyRecipe(t, proxyRecipe{heading: "### Behind nginx", fence: "nginx", start: startNginx})
}

// startNginx serves the recipe's configuration on port, for node.test and
// localhost, with a certificate of a test CA, and returns the CA.
func startNginx(t *testing.T, block string, port int, _ string) string {
	t.Helper()
	nginx := nginxBinary(t)
	dir := t.TempDir()
	ca := testcert.NewCA(t, "civnode nginx test CA")
	cert, key := ca.ServerNamed(t, "node.test").Write(t, dir, "node")
	caFile := filepath.Join(dir, "ca.pem")
	testcert.WriteFile(t, caFile, ca.PEM)
	for old, repl := range map[string]string{
		"listen 443 ssl http2;":                                fmt.Sprintf("listen 127.0.0.1:%d ssl http2;", port),
		"server_name node.example.com;":                        "server_name node.test localhost;",
		"/etc/letsencrypt/live/node.example.com/fullchain.pem": cert,
		"/etc/letsencrypt/live/node.example.com/privkey.pem":   key,
	} {
		if !strings.Contains(block, old) {
			t.Fatalf("the nginx recipe has no %q:\n%s", old, block)
		}
		block = strings.ReplaceAll(block, old, repl)
	}
	var temps strings.Builder
	for _, temp := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&temps, "\t%s_temp_path %s;\n", temp, filepath.Join(dir, temp))
	}
	config := fmt.Sprintf("worker_processes 1;\npid %s;\nevents { worker_connections 256; }\nhttp {\n\taccess_log off;\n%s%s}\n",
		filepath.Join(dir, "nginx.pid"), temps.String(), block)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	errorLog := filepath.Join(dir, "error.log")
	out := &syncBuffer{}
	startProxyProcess(t, exec.Command(nginx, "-e", errorLog, "-p", dir, "-c", conf, "-g", "daemon off;"), out)
	t.Cleanup(func() {
		if t.Failed() {
			logged, _ := os.ReadFile(errorLog)
			t.Logf("nginx's output:\n%s\nerror log:\n%s", out, logged)
		}
	})
	return caFile
}

// nginxBinary is Debian's nginx, which is in /usr/sbin, off the PATH of
// most users.
func nginxBinary(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return testtool.Need(t, "nginx", "apt-get install nginx")
}
