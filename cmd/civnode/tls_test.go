package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civnode/civnode/internal/testcert"
	"github.com/civnode/civnode/internal/testtool"
)

// anyListeningLine is serve's listening line for any scheme and address.
var anyListeningLine = regexp.MustCompile(`^civnode listening on (https?://[^ ]+)$`)

// startServe runs serve on dir with args and waits for its listening line;
// like startNodeArgs, for HTTPS and addresses beyond loopback.
func startServe(t *testing.T, dir string, args ...string) *node {
	t.Helper()
	return serveUntilListening(t, dir, anyListeningLine, args...)
}

// tlsFixture is a test CA, a server pair signed by it on disk, and a
// client that trusts the CA and negotiates HTTP/2.
type tlsFixture struct {
	ca                *testcert.CA
	pair              testcert.Pair
	dir               string
	certFile, keyFile string
	caFile            string
	client            *http.Client
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	f := &tlsFixture{ca: testcert.NewCA(t, "civnode test CA"), dir: t.TempDir()}
	f.pair = f.ca.Server(t)
	f.certFile, f.keyFile = f.pair.Write(t, f.dir, "node")
	f.caFile = filepath.Join(f.dir, "ca.pem")
	testcert.WriteFile(t, f.caFile, f.ca.PEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}, ForceAttemptHTTP2: true}
	f.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return f
}

// servedSerial is the serial of the certificate a new connection to url's
// host is served.
func (f *tlsFixture) servedSerial(t *testing.T, url string) string {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: f.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestServeTLS: serve --tls-cert/--tls-key answers HTTPS over HTTP/2 and
// not plain HTTP; a pair renewed on disk is served to new connections
// while an open stream keeps running, and a key that does not match keeps
// the previous pair, with a warning that says why.
func TestServeTLS(t *testing.T) {
	f := newTLSFixture(t)
	n := startServe(t, t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile)
	if !strings.HasPrefix(n.url, "https://127.0.0.1:") {
		t.Fatalf("listening on %s, want https://", n.url)
	}
	resp, err := f.client.Get(n.url + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("GET /v1/health over TLS: %s %s", resp.Proto, resp.Status)
	}
	if resp, err := httpClient.Get("http://" + strings.TrimPrefix(n.url, "https://") + "/v1/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("plain HTTP to the TLS port answered %s", resp.Status)
	}

	// The stream, over HTTP/1.1 as WebSocket asks.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	wsTransport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}}
	defer wsTransport.CloseIdleConnections()
	ws, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(n.url, "https")+"/v1/stream?after_seq=0", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: wsTransport}, HTTPHeader: http.Header{"Authorization": {"Bearer " + n.token}}})
	if err != nil {
		t.Fatalf("dial the stream over TLS: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)

	renewed := f.ca.Server(t)
	start := time.Now()
	renewed.Write(t, f.dir, "node")
	for f.servedSerial(t, n.url) != renewed.Serial.String() {
		if time.Since(start) > waitTimeout {
			t.Fatalf("the renewed certificate is not served after %v\nstderr:\n%s", waitTimeout, n.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The poll is every 250 ms; the bound leaves room for a loaded machine.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the renewed certificate was served %v after it was written", took)
	} else {
		t.Logf("the renewed certificate served %v after it was written", took.Round(time.Millisecond))
	}

	// The stream opened before the renewal carries an event written after it.
	publicID := "tls-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	body := fmt.Sprintf(`{"display_name":"TLS","public_id":%q,"faction":"order"}`, publicID)
	req, err := http.NewRequest(http.MethodPost, n.url+"/v1/civilization/bootstrap-identity", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+n.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err = f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bootstrap over TLS: %s", resp.Status)
	}
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("the stream opened before the renewal: %v", err)
		}
		if strings.Contains(string(msg), publicID) {
			break
		}
	}

	// Only the key replaced, with one that is not the certificate's.
	testcert.WriteFile(t, f.keyFile, f.ca.Server(t).KeyPEM)
	for !strings.Contains(n.stderr.String(), "TLS certificate not reloaded") {
		if time.Since(start) > 2*waitTimeout {
			t.Fatalf("no warning of the mismatched key\nstderr:\n%s", n.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(n.stderr.String(), "does not match") {
		t.Errorf("the warning does not say why\nstderr:\n%s", n.stderr)
	}
	if got := f.servedSerial(t, n.url); got != renewed.Serial.String() {
		t.Errorf("after a mismatched key served %s, want the previous pair's %s", got, renewed.Serial)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	n.stop(t)
}

// TestServeTLSMismatchedKey: a key that is not the certificate's stops the
// start with exit 1 and says so.
func TestServeTLSMismatchedKey(t *testing.T) {
	f := newTLSFixture(t)
	testcert.WriteFile(t, f.keyFile, f.ca.Server(t).KeyPEM)
	r := runCLI(t, nil, "serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile)
	if r.code != 1 || r.err == nil || !strings.Contains(r.err.Error(), "does not match") {
		t.Fatalf("serve with a mismatched key: exit %d, %v\nstdout:\n%s", r.code, r.err, r.stdout)
	}
	if strings.Contains(r.stdout, "listening") {
		t.Errorf("it listened: %s", r.stdout)
	}
}

// TestServeTLSClientCA: with --tls-client-ca a client without a
// certificate from that CA is refused, one with it served.
func TestServeTLSClientCA(t *testing.T) {
	f := newTLSFixture(t)
	clients := testcert.NewCA(t, "client CA")
	clientsFile := filepath.Join(f.dir, "clients.pem")
	testcert.WriteFile(t, clientsFile, clients.PEM)
	n := startServe(t, t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile, "--tls-client-ca", clientsFile)
	get := func(certs ...tls.Certificate) error {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool(), Certificates: certs}, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(n.url + "/v1/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	}
	if err := get(); err == nil {
		t.Error("a client without a certificate was served")
	}
	if err := get(f.ca.Client(t, "stranger").TLS(t)); err == nil {
		t.Error("a client with a certificate of another CA was served")
	}
	if err := get(clients.Client(t, "observer").TLS(t)); err != nil {
		t.Errorf("a client with a certificate of the client CA: %v", err)
	}
}

// TestServeTLSCurl: curl --cacert reaches the node over HTTPS.
func TestServeTLSCurl(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts curl as a subprocess; the full suite runs it")
	}
	curl := testtool.Need(t, "curl", "apt-get install curl")
	f := newTLSFixture(t)
	n := startServe(t, t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile)
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, curl, "-sS", "--cacert", f.caFile, "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
		n.url+"/v1/health").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "200 ") {
		t.Fatalf("curl --cacert: %v: %s", err, out)
	}
	t.Logf("curl: %s", out)
	if out, err := exec.CommandContext(ctx, curl, "-sS", "-o", "/dev/null", n.url+"/v1/health").CombinedOutput(); err == nil {
		t.Errorf("curl without the CA trusted the node: %s", out)
	}
}

// TestServePlainHTTPBeyondLoopback: plain HTTP on every interface starts
// only with --allow-plain-http, and then warns.
func TestServePlainHTTPBeyondLoopback(t *testing.T) {
	r := runCLI(t, nil, "serve", "--data-dir", t.TempDir(), "--addr", "0.0.0.0:0")
	if r.code != 1 || r.err == nil || !strings.Contains(r.err.Error(), "--allow-plain-http") {
		t.Fatalf("plain HTTP on 0.0.0.0: exit %d, %v\nstdout:\n%s", r.code, r.err, r.stdout)
	}
	n := startServe(t, t.TempDir(), "--addr", "0.0.0.0:0", "--allow-plain-http")
	if !strings.Contains(n.stderr.String(), "serving plain HTTP on an address that is not loopback") {
		t.Errorf("no warning\nstderr:\n%s", n.stderr)
	}
	n.stop(t)
}

// TestCLIOverTLS: the commands that talk to a node reach one that serves
// HTTPS at its https:// URL with --ca-file, and fail without it, for the
// node's CA is not among the system's: transparency check, mirror --token,
// and token over TCP (here the data dir's control.sock is a plain file, so
// the channel falls back to --addr, where the node proves itself inside
// TLS).
func TestCLIOverTLS(t *testing.T) {
	f := newTLSFixture(t)
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	if err := os.WriteFile(filepath.Join(dir, "control.sock"), []byte("not a socket\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startServe(t, dir, "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile)

	state := filepath.Join(t.TempDir(), "state.json")
	r := runCLI(t, nil, "transparency", "check", "--addr", n.url, "--token", n.token, "--state", state, "--ca-file", f.caFile)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "trusted ") {
		t.Errorf("transparency check --ca-file: exit %d, %v\nstdout: %s\nstderr: %s", r.code, r.err, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "transparency", "check", "--addr", n.url, "--token", n.token, "--state", filepath.Join(t.TempDir(), "s.json"))
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr+fmt.Sprint(r.err), "certificate") {
		t.Errorf("transparency check without --ca-file: exit %d, %v\nstdout: %s\nstderr: %s", r.code, r.err, r.stdout, r.stderr)
	}

	r = runCLI(t, nil, "mirror", "--from", n.url, "--data-dir", filepath.Join(t.TempDir(), "mirror"), "--once", "--token", n.token, "--ca-file", f.caFile)
	if r.code != 0 {
		t.Errorf("mirror --token --ca-file: exit %d, %v\nstdout: %s\nstderr: %s", r.code, r.err, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "mirror", "--from", n.url, "--data-dir", filepath.Join(t.TempDir(), "mirror2"), "--once", "--token", n.token)
	if r.code == 0 {
		t.Errorf("mirror without --ca-file followed the node\nstdout: %s", r.stdout)
	}

	r = runCLI(t, nil, "token", "create", "--observer", "--data-dir", dir, "--addr", n.url, "--ca-file", f.caFile)
	if r.code != 0 {
		t.Errorf("token create over TLS with --ca-file: exit %d, %v\nstdout: %s\nstderr: %s", r.code, r.err, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "token", "list", "--data-dir", dir, "--addr", n.url)
	if r.code != 1 || !strings.Contains(fmt.Sprint(r.err), "--ca-file") {
		t.Errorf("token list over TLS without --ca-file: exit %d, %v\nstdout: %s", r.code, r.err, r.stdout)
	}
	n.stop(t)
}

// TestBenchNodeOverTLS: bench --node takes a node's https:// URL with
// --ca-file: its fill, its load clients and its stream clients all reach
// the node over TLS; without --ca-file it fails.
func TestBenchNodeOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a bench run; the full suite runs it")
	}
	f := newTLSFixture(t)
	n := startServe(t, t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile)
	args := []string{"bench", "--node", n.url, "--token", n.token, "--stream-only", "--events", "50", "--duration", "300ms",
		"--json", "--tmp", t.TempDir(), "--log-level", "warn"}
	r := runCLI(t, nil, append(args, "--ca-file", f.caFile)...)
	if r.code != 0 || !strings.Contains(r.stdout, `"stream_events_per_s"`) {
		t.Fatalf("bench --node https:// --ca-file: exit %d, %v\nstdout: %s\nstderr: %s", r.code, r.err, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, args...); r.code == 0 {
		t.Errorf("bench --node https:// without --ca-file passed:\n%s", r.stdout)
	}
	n.stop(t)
}

// TestDoctorOverTLS: doctor --addr https://HOST:PORT --ca-file checks a
// node that serves HTTPS: the process on the port proves, inside TLS, that
// it is the data dir's node, also when the channel has to use TCP.
func TestDoctorOverTLS(t *testing.T) {
	f := newTLSFixture(t)
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	if err := os.WriteFile(filepath.Join(dir, "control.sock"), []byte("not a socket\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startServe(t, dir, "--addr", "127.0.0.1:0", "--tls-cert", f.certFile, "--tls-key", f.keyFile)
	r := runCLI(t, nil, "doctor", "--data-dir", dir, "--addr", n.url, "--ca-file", f.caFile, "--registry-url", "", "--json")
	var rep struct {
		Checks []struct{ Name, Status, Detail string }
	}
	jsonOf(t, r.stdout, &rep)
	got := map[string]string{}
	for _, c := range rep.Checks {
		got[c.Name] = c.Status + ": " + c.Detail
	}
	for _, name := range []string{"port", "node"} {
		if !strings.HasPrefix(got[name], "ok") {
			t.Errorf("doctor over TLS, %s: %s\nstdout: %s", name, got[name], r.stdout)
		}
	}
	if !strings.Contains(got["port"], "proved it holds node.key") {
		t.Errorf("port: %s", got["port"])
	}
	r = runCLI(t, nil, "doctor", "--data-dir", dir, "--addr", n.url, "--registry-url", "", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, "certificate") {
		t.Errorf("doctor over TLS without --ca-file: exit %d\nstdout: %s", r.code, r.stdout)
	}
	n.stop(t)
}
