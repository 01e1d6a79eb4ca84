package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// nodeChannel is the CLI's way to the API of the node running on a data dir,
// with the owner token of that dir. The token commands use it; so will every
// command that acts on a running node as its owner (the oracle CLI, wallet).
//
// The owner token is the node's whole authority, so it goes only to the node of
// the data dir, and openNodeChannel makes sure that is who listens:
//
//   - first the control socket <data-dir>/control.sock, which serve creates. It
//     lives in the data dir (0700), so whoever could put a socket there could as
//     well read control.token; the path is the proof.
//   - otherwise TCP at --addr, on connections over which the node has first
//     proved it holds the data dir's node.key: it signs a fresh nonce, its DID
//     and the address the CLI dialed (POST /v1/node/proof). A process that merely
//     holds --addr cannot sign, and a relay on --addr that forwards to the real
//     node gets a signature over the node's own address, which is not the one the
//     CLI dialed. Every TCP connection the client opens is proved before the
//     client writes a request on it, so no token crosses an unproved one.
type nodeChannel struct {
	Client *http.Client // follows no redirect and uses no proxy
	Base   string       // URL prefix of the API: http://HOST:PORT, or http://localhost over the socket
	Token  string       // the owner token; send it through Client to Base only (NewRequest)
	Via    string       // how the node is reached, for messages: the socket path or HOST:PORT

	dialer *provenDialer
}

// Bounds of the channel's set-up; onlineTimeout (nodechannel_admin.go) bounds each
// request once the channel is open.
const (
	socketDialTimeout = 2 * time.Second
	tcpDialTimeout    = 10 * time.Second
	// proofTimeout bounds the proof exchange on a connection; the node answers it
	// without touching the log.
	proofTimeout = 10 * time.Second
	// proofAnswerLimit bounds what is read of a proof answer, which is about 200
	// bytes.
	proofAnswerLimit = 4 << 10
)

// openNodeChannel opens the channel to the node running on dir. addr is the
// node's TCP address (--addr), used only when the control socket cannot be
// reached. The caller closes the channel.
func openNodeChannel(ctx context.Context, dir datadir.Dir, addr string, logger *slog.Logger) (*nodeChannel, error) {
	token, err := datadir.LoadControlToken(dir.TokenPath(), logger)
	if err != nil {
		return nil, fmt.Errorf("%w (%s), but its owner token cannot be read: %w", datadir.ErrInUse, dir, err)
	}
	if conn, err := dialSocket(ctx, dir.SocketPath()); err == nil {
		logger.Debug("reaching the node through its control socket", "path", dir.SocketPath())
		path := dir.SocketPath()
		return newNodeChannel("http://localhost", token, path, conn, func(ctx context.Context) (net.Conn, error) {
			return dialSocket(ctx, path)
		}), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		logger.Debug("control socket unreachable; trying TCP", "path", dir.SocketPath(), "err", err)
	}

	host, err := hostPort(addr)
	if err != nil {
		return nil, usageErrorf("--addr %q: %w", addr, err)
	}
	key, err := datadir.LoadNodeKey(dir.KeyPath(), logger)
	if err != nil {
		return nil, fmt.Errorf("%w (%s), but its node.key, which checks the node at %s, cannot be read: %w", datadir.ErrInUse, dir, host, err)
	}
	pub := key.Public().(ed25519.PublicKey)
	dial := func(ctx context.Context) (net.Conn, error) {
		return dialProvenNode(ctx, dir, host, pub)
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	logger.Debug("the node at --addr proved it holds node.key", "addr", host)
	return newNodeChannel("http://"+host, token, host, conn, dial), nil
}

func newNodeChannel(base, token, via string, first net.Conn, dial func(context.Context) (net.Conn, error)) *nodeChannel {
	d := &provenDialer{first: first, dial: dial}
	return &nodeChannel{
		Client: &http.Client{
			Transport: &http.Transport{
				// Every connection comes from d, whatever the URL names; never a
				// proxy from the environment, which would be sent the token.
				Proxy:       nil,
				DialContext: d.DialContext,
			},
			// The node never redirects; a redirect is an answer, not an order to
			// send the token elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Timeout:       onlineTimeout,
		},
		Base: base, Token: token, Via: via, dialer: d,
	}
}

// NewRequest builds a request to the node's path with the owner token.
func (c *nodeChannel) NewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, fmt.Errorf("request to the node at %s: %w", c.Via, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	return req, nil
}

// Close closes the channel's connections.
func (c *nodeChannel) Close() {
	c.Client.CloseIdleConnections()
	c.dialer.close()
}

// provenDialer hands the transport the connection openNodeChannel checked,
// then a new checked one for each further dial.
type provenDialer struct {
	mu    sync.Mutex
	first net.Conn
	dial  func(context.Context) (net.Conn, error)
}

func (d *provenDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	d.mu.Lock()
	c := d.first
	d.first = nil
	d.mu.Unlock()
	if c != nil {
		return c, nil
	}
	return d.dial(ctx)
}

func (d *provenDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first != nil {
		d.first.Close()
		d.first = nil
	}
}

// dialSocket connects to the control socket. A path that is missing, or not a
// socket, is fs.ErrNotExist: no node serves there.
func dialSocket(ctx context.Context, path string) (net.Conn, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("%s is not a socket: %w", path, fs.ErrNotExist)
	}
	d := net.Dialer{Timeout: socketDialTimeout}
	return d.DialContext(ctx, "unix", path)
}

// hostPort turns --addr, which may be given as a URL, into HOST:PORT.
func hostPort(addr string) (string, error) {
	a := strings.TrimSuffix(strings.TrimPrefix(addr, "http://"), "/")
	if strings.HasPrefix(a, "https://") {
		return "", errors.New("the node serves plain HTTP; give HOST:PORT")
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return "", fmt.Errorf("want HOST:PORT: %w", err)
	}
	return a, nil
}

// dialProvenNode dials the node at addr and has it prove, on that connection,
// that it holds the private key of pub. It returns the connection only then.
func dialProvenNode(ctx context.Context, dir datadir.Dir, addr string, pub ed25519.PublicKey) (net.Conn, error) {
	d := net.Dialer{Timeout: tcpDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w, but no node answers at %s (give its address with --addr): %w", datadir.ErrInUse, addr, err)
	}
	if err := proveNode(ctx, conn, addr, pub); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the process at %s is not the node of %s: it %w (%w)", addr, dir, errNodeUnproven, err)
	}
	return conn, nil
}

// nodeProofAnswer is the answer of POST /v1/node/proof.
type nodeProofAnswer struct {
	NodeDID   string `json:"node_did"`
	Addr      string `json:"addr"`
	Signature string `json:"signature"`
}

// proveNode asks the process at the other end of conn to sign a fresh nonce
// with the key of pub, over the address conn dialed. It speaks HTTP/1.1 on conn
// itself, so the proof is made on the very connection that will carry the
// token, and leaves conn ready for the next request.
func proveNode(ctx context.Context, conn net.Conn, host string, pub ed25519.PublicKey) error {
	deadline := time.Now().Add(proofTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	nonce := make([]byte, eventlog.NodeProofNonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("make nonce: %w", err)
	}
	body, err := json.Marshal(map[string]string{"nonce": hex.EncodeToString(nonce)})
	if err != nil {
		return fmt.Errorf("encode proof request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+"/v1/node/proof", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("proof request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("send proof request: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fmt.Errorf("read proof answer: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, proofAnswerLimit+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return fmt.Errorf("read proof answer: %w", err)
	case len(raw) > proofAnswerLimit:
		return fmt.Errorf("its proof answer is over %d bytes", proofAnswerLimit)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("it answered the proof request with %s", resp.Status)
	case br.Buffered() != 0:
		// The transport reads the next answer from conn, not from br.
		return errors.New("it sent more than its proof answer")
	case resp.Close:
		return errors.New("it closed the connection after its proof answer")
	}
	var ans nodeProofAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("decode proof answer: %w", err)
	}
	if want := eventlog.DIDKey(pub); ans.NodeDID != want {
		return fmt.Errorf("it is %q, but this data dir's node is %s", ans.NodeDID, want)
	}
	dialed := conn.RemoteAddr().String()
	if !sameAddr(ans.Addr, dialed) {
		return fmt.Errorf("it signed for %s, not %s, the address dialed: a relay, or an address rewritten on the way", ans.Addr, dialed)
	}
	sig, err := base64.StdEncoding.DecodeString(ans.Signature)
	if err != nil {
		return fmt.Errorf("decode proof signature: %w", err)
	}
	if err := eventlog.VerifyNodeProof(pub, ans.Addr, nonce, sig); err != nil {
		return err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("clear deadline: %w", err)
	}
	return nil
}

// sameAddr compares two IP:PORT addresses as addresses, so that an IPv4 address
// and its IPv4-mapped IPv6 form (a node bound to [::] answering 127.0.0.1) are
// the same.
func sameAddr(a, b string) bool {
	pa, errA := netip.ParseAddrPort(a)
	pb, errB := netip.ParseAddrPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa.Addr().Unmap() == pb.Addr().Unmap() && pa.Port() == pb.Port()
}
