package http

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

var proofNonce = strings.Repeat("a5", eventlog.NodeProofNonceSize)

// TestNodeProof: anyone may ask; the answer verifies against the node's key,
// over the address the caller reached, and against no other key, address or
// nonce.
func TestNodeProof(t *testing.T) {
	n := newTestNode(t)
	r := n.request(http.MethodPost, "/v1/node/proof", "", strings.NewReader(`{"nonce":"`+proofNonce+`"}`))
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	var got nodeProofResponse
	r.decode(t, &got)
	wantAddr := strings.TrimPrefix(n.url, "http://")
	if got.NodeDID != n.log.NodeDID() || got.Addr != wantAddr {
		t.Errorf("proof names %s at %s, want %s at %s", got.NodeDID, got.Addr, n.log.NodeDID(), wantAddr)
	}
	sig, err := base64.StdEncoding.DecodeString(got.Signature)
	if err != nil {
		t.Fatalf("signature %q: %v", got.Signature, err)
	}
	nonce, _ := hex.DecodeString(proofNonce)
	if err := eventlog.VerifyNodeProof(n.log.PublicKey(), wantAddr, nonce, sig); err != nil {
		t.Errorf("the proof does not verify with the node's key: %v", err)
	}
	other := ed25519.NewKeyFromSeed([]byte("another-node-key-seed-32-bytes!!")).Public().(ed25519.PublicKey)
	otherNonce := append([]byte{}, nonce...)
	otherNonce[0] ^= 1
	for name, err := range map[string]error{
		"another key":     eventlog.VerifyNodeProof(other, wantAddr, nonce, sig),
		"another address": eventlog.VerifyNodeProof(n.log.PublicKey(), "127.0.0.1:1", nonce, sig),
		"another nonce":   eventlog.VerifyNodeProof(n.log.PublicKey(), wantAddr, otherNonce, sig),
	} {
		if !errors.Is(err, eventlog.ErrBadNodeProof) {
			t.Errorf("%s: %v, want ErrBadNodeProof", name, err)
		}
	}
	// The signature is over the domain-separated bytes, never bare input.
	if !ed25519.Verify(n.log.PublicKey(), eventlog.NodeProofBytes(got.NodeDID, wantAddr, nonce), sig) ||
		!strings.HasPrefix(string(eventlog.NodeProofBytes(got.NodeDID, wantAddr, nonce)), "civnode-node-proof-v1\n") {
		t.Error("the signature is not over NodeProofBytes")
	}
	if es := n.auditEntries(""); len(es) != 0 {
		t.Errorf("a proof wrote audit entries: %+v", es)
	}
}

func TestNodeProofRefusals(t *testing.T) {
	n := newTestNode(t)
	for _, tc := range []struct {
		name, body  string
		status      int
		code, field string
	}{
		{"no nonce", `{}`, 400, "invalid_field", "nonce"},
		{"short nonce", `{"nonce":"` + proofNonce[2:] + `"}`, 400, "invalid_field", "nonce"},
		{"long nonce", `{"nonce":"` + proofNonce + `00"}`, 400, "invalid_field", "nonce"},
		{"upper-case hex", `{"nonce":"` + strings.ToUpper(proofNonce) + `"}`, 400, "invalid_field", "nonce"},
		{"not hex", `{"nonce":"` + strings.Repeat("zz", 32) + `"}`, 400, "invalid_field", "nonce"},
		{"nonce not a string", `{"nonce":1}`, 400, "invalid_field", "nonce"},
		{"unknown field", `{"nonce":"` + proofNonce + `","addr":"x"}`, 400, "unknown_field", "addr"},
		{"body too large", `{"nonce":"` + proofNonce + `","pad":"` + strings.Repeat("x", 1024) + `"}`, 413, "body_too_large", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.request(http.MethodPost, "/v1/node/proof", "", strings.NewReader(tc.body))
			r.wantError(t, tc.status, tc.code, tc.field)
		})
	}
	n.request(http.MethodGet, "/v1/node/proof", "", nil).wantError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
}

func TestSignNodeProofShape(t *testing.T) {
	n := newTestNode(t)
	nonce := make([]byte, eventlog.NodeProofNonceSize)
	for _, tc := range []struct {
		name  string
		addr  string
		nonce []byte
	}{
		{"short nonce", "127.0.0.1:1", nonce[1:]},
		{"newline in addr", "127.0.0.1:1\n{", nonce},
		{"empty addr", "", nonce},
	} {
		if _, err := n.log.SignNodeProof(tc.addr, tc.nonce); err == nil {
			t.Errorf("%s: signed", tc.name)
		}
	}
	if _, err := n.log.SignNodeProof("127.0.0.1:1", nonce); err != nil {
		t.Error(err)
	}
}

// BenchmarkNodeProof compares the unauthenticated proof with the health probe,
// the other route anyone may call: the signature is the difference.
func BenchmarkNodeProof(b *testing.B) {
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(testSeed), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	url := "http://" + ln.Addr().String()
	client := &http.Client{}
	for _, bc := range []struct{ name, method, path, body string }{
		{"health", http.MethodGet, "/v1/health", ""},
		{"proof", http.MethodPost, "/v1/node/proof", `{"nonce":"` + proofNonce + `"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(bc.method, url+bc.path, strings.NewReader(bc.body))
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
