package localnode

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testcert"
)

// TestIsLoopback: only 127.0.0.0/8, ::1 and localhost are loopback; no host
// and any other name may reach beyond it.
func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7777": true, "127.3.2.1:0": true, "[::1]:7777": true, "localhost:7777": true, "LOCALHOST:1": true,
		":7777": false, "0.0.0.0:7777": false, "[::]:7777": false, "192.168.1.2:7777": false, "node.example:7777": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestTLSCheck: plain HTTP beyond loopback needs AllowPlainHTTP and is then
// warned of; a certificate needs its key; client CAs need HTTPS.
func TestTLSCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  TLS
		addr string
		want error
		warn bool
	}{
		{"loopback", TLS{}, "127.0.0.1:0", nil, false},
		{"every interface", TLS{}, ":0", ErrPlainHTTP, false},
		{"every interface, allowed", TLS{AllowPlainHTTP: true}, "0.0.0.0:0", nil, true},
		{"HTTPS", TLS{CertFile: "c", KeyFile: "k"}, ":0", nil, false},
		{"a certificate without its key", TLS{CertFile: "c"}, "127.0.0.1:0", ErrTLSFiles, false},
		{"a key without its certificate", TLS{KeyFile: "k"}, "127.0.0.1:0", ErrTLSFiles, false},
		{"client CAs without HTTPS", TLS{ClientCAFile: "ca"}, "127.0.0.1:0", ErrTLSFiles, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			err := tc.tls.check(tc.addr, slog.New(slog.NewTextHandler(&log, nil)))
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("check: %v, want %v", err, tc.want)
			}
			if warned := strings.Contains(log.String(), "level=WARN"); warned != tc.warn {
				t.Errorf("warned %v, want %v: %s", warned, tc.warn, log.String())
			}
		})
	}
}

// servedSerial is the serial of the certificate r hands a new handshake.
func servedSerial(t *testing.T, r *certReloader) string {
	t.Helper()
	c, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return certSerial(t, c)
}

func certSerial(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	if c.Leaf == nil {
		t.Fatal("no parsed leaf")
	}
	return c.Leaf.SerialNumber.String()
}

// TestCertReloader: a pair whose key is not its certificate's is refused
// at start; a renewed pair on disk is served within the poll; a mismatched
// pair on disk keeps the old one, with a warning that says why.
func TestCertReloader(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "civnode test CA")
	first, other := ca.Server(t), ca.Server(t)

	testcert.WriteFile(t, dir+"/bad.crt", first.CertPEM)
	testcert.WriteFile(t, dir+"/bad.key", other.KeyPEM)
	if _, err := newCertReloader(dir+"/bad.crt", dir+"/bad.key", slog.New(slog.DiscardHandler)); !errors.Is(err, ErrTLSFiles) ||
		!strings.Contains(err.Error(), "does not match") {
		t.Fatalf("mismatched pair at start: %v", err)
	}

	certFile, keyFile := first.Write(t, dir, "node")
	var log lockedBuffer
	r, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, r); got != first.Serial.String() {
		t.Fatalf("served %s, want the first pair's %s", got, first.Serial)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 10 s; log:\n%s", what, log.String())
			}
		}
	}
	renewed := ca.Server(t)
	renewed.Write(t, dir, "node")
	waitFor("the renewed pair served", func() bool { return servedSerial(t, r) == renewed.Serial.String() })

	// Only the key replaced: it is not the certificate's.
	testcert.WriteFile(t, keyFile, other.KeyPEM)
	waitFor("the refused reload logged", func() bool { return strings.Contains(log.String(), "not reloaded") })
	if !strings.Contains(log.String(), "does not match") {
		t.Errorf("the warning does not say why: %s", log.String())
	}
	if got := servedSerial(t, r); got != renewed.Serial.String() {
		t.Fatalf("after a mismatched pair served %s, want the previous %s", got, renewed.Serial)
	}

	// SIGHUP loads the files again though they did not change since: here
	// the mismatched pair, refused again.
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("the reload on SIGHUP logged", func() bool { return strings.Contains(log.String(), "why=SIGHUP") })
	if got := servedSerial(t, r); got != renewed.Serial.String() {
		t.Fatalf("after SIGHUP served %s, want the previous %s", got, renewed.Serial)
	}
}
