package http

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"log/slog"
	"net/http"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/testcert"
)

// TestTLSListenerProtocols: over a TLSListener merged with a plain
// listener (as the control socket is), a client that negotiates h2 is
// served HTTP/2 and one that asks for HTTP/1.1 gets it, behind the
// connection caps' wrappers; plain HTTP to the TLS port is not served,
// and the plain listener still serves plain HTTP/1.1.
func TestTLSListenerProtocols(t *testing.T) {
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(testSeed), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := New(Options{Log: l, OwnerToken: testToken, Logger: slog.New(slog.DiscardHandler)})
	ca := testcert.NewCA(t, "test CA")
	pair := ca.Server(t).TLS(t)
	tlsLn, plainLn := listen(t), listen(t)
	ln := MergeListeners(TLSListener(tlsLn, &tls.Config{Certificates: []tls.Certificate{pair}}), plainLn)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	secure := "https://" + tlsLn.Addr().String()

	get := func(t *testing.T, c *http.Client, url string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url+"/v1/events?limit=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", url, resp.Status)
		}
		return resp
	}
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: true}}
	defer h2.CloseIdleConnections()
	if resp := get(t, h2, secure); resp.ProtoMajor != 2 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
		t.Errorf("an h2 client got %s (ALPN %+v)", resp.Proto, resp.TLS)
	}
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), NextProtos: []string{"http/1.1"}}}}
	defer h1.CloseIdleConnections()
	if resp := get(t, h1, secure); resp.ProtoMajor != 1 {
		t.Errorf("an HTTP/1.1 client got %s", resp.Proto)
	}
	if resp := get(t, &http.Client{}, "http://"+plainLn.Addr().String()); resp.ProtoMajor != 1 {
		t.Errorf("the plain listener answered %s", resp.Proto)
	}
	if resp, err := http.Get("http://" + tlsLn.Addr().String() + "/v1/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("plain HTTP to the TLS port answered %s", resp.Status)
	}
}

// TestServedProtocols: HTTP/2 without ALPN is served only where TLS is
// beneath the server.
func TestServedProtocols(t *testing.T) {
	plain := listen(t)
	defer plain.Close()
	if p := servedProtocols(plain); p != nil {
		t.Errorf("a plain listener: %v", p)
	}
	if p := servedProtocols(MergeListeners(plain)); p != nil {
		t.Errorf("a merged plain listener: %v", p)
	}
	other := listen(t)
	defer other.Close()
	p := servedProtocols(MergeListeners(TLSListener(other, &tls.Config{}), plain))
	if p == nil || !p.HTTP1() || !p.HTTP2() || !p.UnencryptedHTTP2() {
		t.Errorf("a merged TLS listener: %v", p)
	}
}
