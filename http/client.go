package http

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Client is the CLI's way to the API of the node running on a data dir, with
// the owner token of that dir (docs/tokens.md). The owner token is the node's
// whole authority, so a Client sends it only over connections its dial
// function has checked reach the node of that dir:
//
//   - the control socket <data-dir>/control.sock, which the node serves beside
//     its TCP listener (ControlSocketListener). It lives in the data dir
//     (0700), so whoever could put a socket there could as well read
//     control.token; the path is the proof.
//   - otherwise TCP, on connections over which the node has first proved it
//     holds the data dir's node key (ProveNode, the client half of POST
//     /v1/node/proof). A process that merely holds the address cannot sign,
//     and a relay that forwards to the real node gets a signature over the
//     node's own address, not the one dialed. Every TCP connection is proved
//     before a request is written on it, so no token crosses an unproved one.
//
// Which of the two, and where the token and key come from, is the caller's to
// decide; NewClient only ever dials through the function it is given.
type Client struct {
	HTTP  *http.Client // follows no redirect and uses no proxy
	Base  string       // URL prefix of the API: http://HOST:PORT, or http://localhost over the socket
	Token string       // the owner token; send it through HTTP to Base only (NewRequest)
	Via   string       // how the node is reached, for messages: the socket path or HOST:PORT

	dialer *provenDialer
}

// ClientTimeout bounds one request of a Client; the node's handler timeout is
// shorter.
const ClientTimeout = 30 * time.Second

// NewClient is a client of the node at base with token whose first connection
// is first, already checked, and whose every further one comes from dial,
// which must check it as well. Close releases them.
func NewClient(base, token, via string, first net.Conn, dial func(context.Context) (net.Conn, error)) *Client {
	d := &provenDialer{first: first, dial: dial}
	return &Client{
		HTTP: &http.Client{
			Transport: &http.Transport{
				// Every connection comes from d, whatever the URL names; never a
				// proxy from the environment, which would be sent the token.
				Proxy:       nil,
				DialContext: d.DialContext,
			},
			// The node never redirects; a redirect is an answer, not an order to
			// send the token elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Timeout:       ClientTimeout,
		},
		Base: base, Token: token, Via: via, dialer: d,
	}
}

// NewRequest builds a request to the node's path with the owner token.
func (c *Client) NewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, fmt.Errorf("request to the node at %s: %w", c.Via, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	return req, nil
}

// Close closes the client's connections.
func (c *Client) Close() {
	c.HTTP.CloseIdleConnections()
	c.dialer.close()
}

// provenDialer hands the transport the connection the caller checked, then a
// new checked one for each further dial.
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
