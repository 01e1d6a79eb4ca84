package stream_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/internal/testcert"
	"github.com/civnode/civnode/stream"
)

// tlsNode is a node whose port speaks TLS with a pair signed by ca, written
// to files in dir.
func tlsNode(t *testing.T, ca *testcert.CA, dir string, logs io.Writer) (*node, string, string) {
	t.Helper()
	certFile, keyFile := ca.Server(t).Write(t, dir, "nats")
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return n, certFile, keyFile
}

// connectTLS connects to the node's port over TLS, trusting pool.
func connectTLS(n *node, pool *x509.CertPool, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		nats.Token(testToken), nats.NoReconnect()}, opts...)
	return nats.Connect("tls://"+n.st.Status().NATS.Listen, opts...)
}

// With a certificate the port speaks TLS only: nats.go trusting the CA gets
// events with a token; a client that speaks plain NATS is not served; the
// node's own subscribers are unaffected.
func TestPortTLS(t *testing.T) {
	ca := testcert.NewCA(t, "nats test CA")
	var logs lockedBuffer
	n, _, _ := tlsNode(t, ca, t.TempDir(), &logs)
	nc, err := connectTLS(n, ca.Pool())
	if err != nil {
		t.Fatalf("nats.go over TLS: %v", err)
	}
	defer nc.Close()
	if cs, err := nc.TLSConnectionState(); err != nil || cs.Version < tls.VersionTLS12 {
		t.Fatalf("connection state %+v, %v: want TLS 1.2 or later", cs, err)
	}
	sub, err := nc.SubscribeSync(stream.EventSubject(n.did, ">"))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	inproc, err := n.st.Subscribe("", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	ev := n.appendN(t, "test.tls", 1)[0]
	if m, err := sub.NextMsg(30 * time.Second); err != nil || string(m.Data) != string(ev.Raw()) {
		t.Fatalf("over TLS: %v, want seq %d", err, ev.Seq)
	}
	receive(t, inproc, 1)

	// Not trusting the CA: the handshake fails.
	if nc, err := connectTLS(n, x509.NewCertPool()); err == nil {
		nc.Close()
		t.Fatal("a client that does not trust the certificate connected")
	}

	waitFor(t, "the failed handshake in the log", func() bool { return strings.Contains(logs.String(), "TLS handshake error") })
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("a client's failed handshake is logged as an error:\n%s", logs.String())
	}

	// Plain NATS: the server says TLS is required and serves nothing.
	conn, err := net.Dial("tcp", n.st.Status().NATS.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, `"tls_required":true`) {
		t.Fatalf("INFO %q, %v: want tls_required", line, err)
	}
	if _, err := io.WriteString(conn, "CONNECT {\"verbose\":false,\"auth_token\":\""+testToken+"\"}\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // closed: not served
		}
		if line == "PONG\r\n" {
			t.Fatal("a plain NATS client was served on the TLS port")
		}
	}
}

// A pair replaced on disk is served to new connections within about a
// second, while an open connection keeps running; a pair that does not load
// keeps the one served.
func TestPortTLSReload(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA := testcert.NewCA(t, "old CA"), testcert.NewCA(t, "new CA")
	n, certFile, keyFile := tlsNode(t, oldCA, dir, io.Discard)
	open, err := connectTLS(n, oldCA.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	sub, err := open.SubscribeSync(stream.EventSubject(n.did, ">"))
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Flush(); err != nil {
		t.Fatal(err)
	}

	// A key that is not the certificate's: not taken.
	other := newCA.Server(t)
	testcert.WriteFile(t, certFile, other.CertPEM)
	time.Sleep(3 * stream.CertPoll)
	if nc, err := connectTLS(n, oldCA.Pool()); err != nil {
		t.Fatalf("after a mismatched certificate was written: %v, want the old pair served", err)
	} else {
		nc.Close()
	}

	testcert.WriteFile(t, keyFile, other.KeyPEM)
	start := time.Now()
	waitFor(t, "the new certificate to be served", func() bool {
		nc, err := connectTLS(n, newCA.Pool())
		if err != nil {
			return false
		}
		nc.Close()
		return true
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the new certificate was served after %s, want about %s", took, stream.CertPoll)
	}
	ev := n.appendN(t, "test.reload", 1)[0]
	if m, err := sub.NextMsg(30 * time.Second); err != nil || string(m.Data) != string(ev.Raw()) {
		t.Fatalf("the connection opened before the reload: %v, want seq %d", err, ev.Seq)
	}
}

// A key that does not match the certificate is refused at start.
func TestPortTLSMismatchedKey(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "nats test CA")
	certFile, _ := ca.Server(t).Write(t, dir, "a")
	_, keyFile := ca.Server(t).Write(t, dir, "b")
	_, err := stream.Start(stream.Options{NodeDID: "did:key:zTest", Listen: "127.0.0.1:0", Authenticate: testTokens.check,
		TLSCertFile: certFile, TLSKeyFile: keyFile})
	if !errors.Is(err, stream.ErrTLSFiles) {
		t.Fatalf("Start with a mismatched key: %v, want %v", err, stream.ErrTLSFiles)
	}
	if _, err := stream.Start(stream.Options{NodeDID: "did:key:zTest", Listen: "127.0.0.1:0", Authenticate: testTokens.check,
		TLSCertFile: certFile}); !errors.Is(err, stream.ErrTLSFiles) {
		t.Fatalf("Start with a certificate and no key: %v, want %v", err, stream.ErrTLSFiles)
	}
}

// ReloadTLS (serve's SIGHUP) loads the pair again though the poll sees no
// change: here the new files have the old ones' sizes and modification times.
func TestPortTLSReloadOnRequest(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA := testcert.NewCA(t, "old CA"), testcert.NewCA(t, "new CA")
	old := oldCA.Server(t)
	certFile, keyFile := old.Write(t, dir, "nats")
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var stamps []time.Time
	for _, f := range []string{certFile, keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, fi.ModTime())
	}
	var next testcert.Pair
	for i := 0; ; i++ {
		next = newCA.Server(t)
		if len(next.CertPEM) == len(old.CertPEM) && len(next.KeyPEM) == len(old.KeyPEM) {
			break
		}
		if i == 200 {
			t.Fatal("no pair of the old one's sizes in 200 tries")
		}
	}
	next.Write(t, dir, "nats")
	for i, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, stamps[i], stamps[i]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * stream.CertPoll)
	if nc, err := connectTLS(n, oldCA.Pool()); err != nil {
		t.Fatalf("files that look unchanged were reloaded by the poll, or the old pair is gone: %v", err)
	} else {
		nc.Close()
	}
	n.st.ReloadTLS()
	waitFor(t, "the new certificate to be served after ReloadTLS", func() bool {
		nc, err := connectTLS(n, newCA.Pool())
		if err != nil {
			return false
		}
		nc.Close()
		return true
	})
}
