package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
)

// wiretap is a TCP listener in the test that stands where the CLI looks for a
// node: it records every byte any client sends it, so a test can prove what
// reached it. Each connection is handed to serve, which speaks (or relays) on
// it; the recording is made below serve, so nothing serve skips escapes it.
type wiretap struct {
	ln    net.Listener
	addr  string
	mu    sync.Mutex
	got   bytes.Buffer
	conns sync.WaitGroup
}

func newWiretap(t *testing.T, serve func(c net.Conn, in io.Reader)) *wiretap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wiretap{ln: ln, addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.conns.Add(1)
			go func() {
				defer w.conns.Done()
				defer c.Close()
				serve(c, io.TeeReader(c, w))
				// Read on until the client closes, so that nothing it sends after
				// serve gave up goes unrecorded.
				_, _ = io.Copy(io.Discard, io.TeeReader(c, w))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return w
}

func (w *wiretap) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

// received closes the listener, waits until every client has closed its
// connection and returns all they sent. A CLI that has exited must have closed
// its connections: one left open could still send, so it fails the test, after
// the caller has checked what arrived so far.
func (w *wiretap) received(t *testing.T) string {
	t.Helper()
	w.ln.Close()
	done := make(chan struct{})
	go func() { w.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Cleanup(func() { t.Errorf("a client left its connection to %s open after exiting", w.addr) })
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.String()
}

// forgedProof answers every HTTP request on c with 200 and a proof that names
// the real node and the address the client dialed but whose signature is made
// with a key the impostor holds, as a process that read the node's DID from its
// /v1/state or an export would forge it.
func forgedProof(nodeDID string) func(c net.Conn, in io.Reader) {
	_, impostor, _ := ed25519.GenerateKey(nil)
	return func(c net.Conn, in io.Reader) {
		addr := c.LocalAddr().String()
		br := bufio.NewReader(in)
		for {
			nonce, err := readProofRequest(br)
			if err != nil {
				return
			}
			sig := ed25519.Sign(impostor, eventlog.NodeProofBytes(nodeDID, addr, nonce))
			answer, _ := json.Marshal(map[string]string{
				"node_did": nodeDID, "addr": addr, "signature": base64.StdEncoding.EncodeToString(sig),
				// For a CLI that skips the proof and lists tokens at once.
				"tokens": "",
			})
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
		}
	}
}

// relayTo forwards the connection, both ways, to the node at target.
func relayTo(target string) func(c net.Conn, in io.Reader) {
	return func(c net.Conn, in io.Reader) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
		_, _ = io.Copy(up, in)
	}
}

// removeSocket makes a running node unreachable through its control socket, as
// a data dir path too long for a socket or a node that predates the socket
// does, so the CLI has to use TCP.
func removeSocket(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "control.sock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

func nodeDIDOf(t *testing.T, dir string) string {
	t.Helper()
	key, err := datadir.LoadNodeKey(filepath.Join(dir, "node.key"), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	return eventlog.DIDKey(key.Public().(ed25519.PublicKey))
}

const notTheNode = "could not prove it holds node.key; the owner token was not sent"

// TestTokenNotSentToImpostor: a process that holds
// --addr while the node runs elsewhere must never receive the owner token, even
// when it answers like the node would.
func TestTokenNotSentToImpostor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	removeSocket(t, dir)
	tap := newWiretap(t, forgedProof(nodeDIDOf(t, dir)))
	for _, args := range [][]string{
		{"list"},
		{"create", "--observer"},
	} {
		res := runCLI(t, nil, append(append([]string{"token"}, args...), "--data-dir", dir, "--addr", tap.addr)...)
		if res.code != 1 || res.stdout != "" ||
			!strings.Contains(res.stderr, "the process at "+tap.addr+" is not the node of "+dir) ||
			!strings.Contains(res.stderr, notTheNode) {
			t.Errorf("token %v at an impostor: code %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
		}
	}
	tap.requireWithheld(t, "the impostor", n.token)
}

// TestTokenNotSentThroughRelay: a process on port P that relays to the real
// node on port Q gets a valid signature, but over Q, so the CLI (which dialed
// P) refuses it and the token never crosses the relay.
func TestTokenNotSentThroughRelay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	removeSocket(t, dir)
	relay := newWiretap(t, relayTo(strings.TrimPrefix(n.url, "http://")))
	res := runCLI(t, nil, "token", "list", "--data-dir", dir, "--addr", relay.addr)
	if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, notTheNode) ||
		!strings.Contains(res.stderr, "it signed for "+strings.TrimPrefix(n.url, "http://")) {
		t.Errorf("token list through a relay: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	relay.requireWithheld(t, "the relay", n.token)
}

// TestTokenOverTCPWithProof: without the socket, the CLI reaches the real node
// at --addr once it has proved itself; a wrong --addr is named with a hint.
func TestTokenOverTCPWithProof(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	removeSocket(t, dir)
	addr := strings.TrimPrefix(n.url, "http://")
	_, _, id := tokenCLI(t, 0, "create", "--observer", "--data-dir", dir, "--addr", addr)
	res, _, _ := tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", addr)
	if id == "" || !strings.Contains(res.stdout, id) {
		t.Errorf("list over TCP does not show %q:\n%s", id, res.stdout)
	}
	// Two connections: each is proved before a request carries the token.
	res, _, _ = tokenCLI(t, 1, "list", "--data-dir", dir, "--addr", "127.0.0.1:1")
	if !strings.Contains(res.stderr, "data dir in use by a running node, but no node answers at 127.0.0.1:1") ||
		!strings.Contains(res.stderr, "give its address with --addr") {
		t.Errorf("list at a wrong address: stderr %q", res.stderr)
	}
}

// TestTokenOverSocket: with the socket in place the CLI needs no --addr, and a
// process at --addr hears nothing from it.
func TestTokenOverSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	sock := filepath.Join(dir, "control.sock")
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatalf("serve made no control socket: %v", err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("control.sock: mode %v, want a socket with 0600", fi.Mode())
	}
	tap := newWiretap(t, forgedProof(nodeDIDOf(t, dir)))
	_, _, id := tokenCLI(t, 0, "create", "--observer", "--data-dir", dir, "--addr", tap.addr)
	res, _, _ := tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", "127.0.0.1:1")
	if id == "" || !strings.Contains(res.stdout, id) {
		t.Errorf("list over the socket does not show %q:\n%s", id, res.stdout)
	}
	if got := tap.received(t); got != "" {
		t.Errorf("with the socket in place, the process at --addr still received:\n%s", got)
	}
	// A refused request over the socket is audited with where it came from.
	overSocket := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	for _, tok := range []string{"cvn_wrong", n.token} {
		req, _ := http.NewRequest(http.MethodGet, "http://localhost/v1/audit?action=auth.failed", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := overSocket.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tok == n.token && !strings.Contains(string(body), `"remote":"unix:control.sock"`) {
			t.Errorf("auth.failed over the socket: %s", body)
		}
	}
	overSocket.CloseIdleConnections()
	n.stop(t)
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("control.sock after a clean stop: %v, want it removed", err)
	}
}

// TestServeReplacesStaleSocket: a socket file left by a killed node does not
// stop the next start, which listens on a fresh one.
func TestServeReplacesStaleSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	sock := filepath.Join(dir, "control.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false) // as SIGKILL leaves it
	ln.Close()
	if err := os.Chmod(sock, 0o755); err != nil {
		t.Fatal(err)
	}
	startNode(t, dir)
	if m := fileMode(t, sock); m != 0o600 {
		t.Errorf("control.sock mode %v after replacing a stale one, want 0600", m)
	}
	tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", "127.0.0.1:1")
}

// TestServeLeavesNonSocketAlone: a file at control.sock that is not a socket is
// not the node's to delete; the node serves without the socket and the CLI
// falls back to TCP with the proof.
func TestServeLeavesNonSocketAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	sock := filepath.Join(dir, "control.sock")
	if err := os.WriteFile(sock, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, dir)
	if !strings.Contains(n.stderr.String(), "not a socket") {
		t.Errorf("serve did not warn about control.sock; stderr:\n%s", n.stderr)
	}
	tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", strings.TrimPrefix(n.url, "http://"))
	n.stop(t)
	if b, err := os.ReadFile(sock); err != nil || string(b) != "mine\n" {
		t.Errorf("control.sock after the node: %q, %v; want the file left as it was", b, err)
	}
}

// TestServeSocketPathTooLong: a data dir whose socket path does not fit a
// sockaddr_un runs without the socket, with a warning, and the CLI uses TCP.
func TestServeSocketPathTooLong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	n := startNode(t, dir)
	if !strings.Contains(n.stderr.String(), "too long for a unix socket") {
		t.Errorf("serve did not warn that the socket path is too long; stderr:\n%s", n.stderr)
	}
	tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", strings.TrimPrefix(n.url, "http://"))
	res, _, _ := tokenCLI(t, 1, "list", "--data-dir", dir, "--addr", "127.0.0.1:1")
	if !strings.Contains(res.stderr, "no node answers at 127.0.0.1:1") {
		t.Errorf("list at a wrong address: stderr %q", res.stderr)
	}
}

// proofServer is a node of dir's key behind an http.Server in the test, which
// counts the proofs it gives.
type proofServer struct {
	addr   string
	token  string
	proofs atomic.Int32
}

func newProofServer(t *testing.T, dir datadir.Dir) *proofServer {
	t.Helper()
	logger := discardLogger()
	if err := dir.Create(logger); err != nil {
		t.Fatal(err)
	}
	key, err := datadir.LoadOrCreateNodeKey(dir.KeyPath(), logger)
	if err != nil {
		t.Fatal(err)
	}
	token, err := datadir.LoadOrCreateControlToken(dir.TokenPath(), logger)
	if err != nil {
		t.Fatal(err)
	}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	srv := civhttp.New(civhttp.Options{Log: l, OwnerToken: token, Logger: logger})
	p := &proofServer{token: token}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/node/proof" {
			p.proofs.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	p.addr = hs.Listener.Addr().String()
	return p
}

// TestNodeChannelProvesEveryConnection: a connection the client opens after
// the first is proved too before it carries the token.
func TestNodeChannelProvesEveryConnection(t *testing.T) {
	dir := datadir.Dir(filepath.Join(t.TempDir(), "node"))
	p := newProofServer(t, dir)
	ctx := context.Background()
	ch, err := localnode.Dial(ctx, dir, p.addr, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if ch.Via != p.addr || ch.Token != p.token {
		t.Errorf("channel via %s, want %s over TCP", ch.Via, p.addr)
	}
	for i := 1; i <= 3; i++ {
		req, err := ch.NewRequest(ctx, http.MethodGet, "/v1/state", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ch.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/state: %s", resp.Status)
		}
		if got := p.proofs.Load(); got != int32(i) {
			t.Fatalf("after %d requests on %d connections: %d proofs", i, i, got)
		}
		ch.HTTP.CloseIdleConnections() // the next request dials anew
	}
}

// TestNodeProofAnswers: the CLI accepts a proof only when every part of it
// holds, whoever made it.
func TestNodeProofAnswers(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	did := eventlog.DIDKey(pub)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	type ans = func(addr string, nonce []byte) (status string, header string, body string)
	signed := func(k ed25519.PrivateKey, did, addr string, nonce []byte) string {
		sig := ed25519.Sign(k, eventlog.NodeProofBytes(did, addr, nonce))
		b, _ := json.Marshal(map[string]string{"node_did": did, "addr": addr, "signature": base64.StdEncoding.EncodeToString(sig)})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		answer ans
		errHas string // "" accepts
	}{
		{"valid", func(addr string, n []byte) (string, string, string) { return "200 OK", "", signed(key, did, addr, n) }, ""},
		{"a node without the endpoint", func(string, []byte) (string, string, string) {
			return "404 Not Found", "", `{"error":"no such endpoint","code":"not_found"}`
		}, "answered the proof request with 404 Not Found"},
		{"another node", func(addr string, n []byte) (string, string, string) {
			d := eventlog.DIDKey(otherKey.Public().(ed25519.PublicKey))
			return "200 OK", "", signed(otherKey, d, addr, n)
		}, "but this data dir's node is " + did},
		{"signed by another key", func(addr string, n []byte) (string, string, string) {
			return "200 OK", "", signed(otherKey, did, addr, n)
		}, "node proof does not verify"},
		{"another nonce", func(addr string, n []byte) (string, string, string) {
			return "200 OK", "", signed(key, did, addr, make([]byte, len(n)))
		}, "node proof does not verify"},
		{"another address", func(_ string, n []byte) (string, string, string) {
			return "200 OK", "", signed(key, did, "127.0.0.1:7777", n)
		}, "it signed for 127.0.0.1:7777"},
		{"signature not base64", func(addr string, n []byte) (string, string, string) {
			return "200 OK", "", `{"node_did":"` + did + `","addr":"` + addr + `","signature":"%%"}`
		}, "decode proof signature"},
		{"not JSON", func(string, []byte) (string, string, string) { return "200 OK", "", "<html>" }, "decode proof answer"},
		{"huge answer", func(string, []byte) (string, string, string) {
			return "200 OK", "", strings.Repeat(" ", civhttp.ProofAnswerLimit+1)
		}, "over 4096 bytes"},
		{"closes after the proof", func(addr string, n []byte) (string, string, string) {
			return "200 OK", "Connection: close\r\n", signed(key, did, addr, n)
		}, "closed the connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tap := newWiretap(t, func(c net.Conn, in io.Reader) {
				nonce, err := readProofRequest(bufio.NewReader(in))
				if err != nil {
					return
				}
				status, header, b := tc.answer(c.LocalAddr().String(), nonce)
				fmt.Fprintf(c, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s", status, header, len(b), b)
			})
			conn, err := localnode.DialProven(context.Background(), "DIR", tap.addr, pub)
			if conn != nil {
				conn.Close()
			}
			switch {
			case tc.errHas == "" && err != nil:
				t.Errorf("refused a valid proof: %v", err)
			case tc.errHas != "" && (err == nil || !errors.Is(err, localnode.ErrUnproven) || !strings.Contains(err.Error(), tc.errHas)):
				t.Errorf("error %v, want localnode.ErrUnproven with %q", err, tc.errHas)
			}
			tap.received(t)
		})
	}
}

// requireWithheld requires that the process behind the tap was asked for a
// proof, and never received token.
func (w *wiretap) requireWithheld(t *testing.T, who, token string) {
	t.Helper()
	got := w.received(t)
	if strings.Contains(got, token) {
		t.Fatalf("%s at %s received the owner token:\n%s", who, w.addr, got)
	}
	if !strings.Contains(got, "/v1/node/proof") {
		t.Errorf("%s saw no proof request; the test proves nothing:\n%s", who, got)
	}
}

// readProofRequest reads one request, as a fake node would, and returns the
// nonce of its proof body (nil for any other body).
func readProofRequest(br *bufio.Reader) ([]byte, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	var body struct {
		Nonce string `json:"nonce"`
	}
	_ = json.NewDecoder(req.Body).Decode(&body)
	nonce, _ := hex.DecodeString(body.Nonce)
	return nonce, nil
}
