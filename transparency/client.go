package transparency

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Client reads a node's transparency endpoints, or a static host's files,
// with one bearer token: an observer's or the owner's at any URL (check,
// prove with a token), the owner's through the channel of a data dir
// (publish, prove on the node's own machine), or none for a static host. It
// is plain net/http: whoever builds the *http.Client decides where its
// connections go.
type Client struct {
	client *http.Client
	base   string // URL prefix of the API, no trailing slash
	token  string // sent to base only, never printed
	via    string // the node, for messages
	// idle, when set (NewObserverClient), fails an answer of which no byte
	// arrived for that long (errStalled): a deadline on progress, not on the
	// whole answer, which may be an event bundle of hundreds of megabytes.
	// A client of NewClient keeps its *http.Client's own timeouts.
	idle time.Duration

	// read and written count the bytes on the wire, headers and TLS included,
	// when the client dialed its own connections (NewObserverClient).
	read, written atomic.Int64
}

// Bounds of the observer's client: an answer the client reads whole is at
// most a tile (8 KiB), a seal or checkpoint, or one event (at most
// eventlog.MaxEventSize); the limit leaves room for a large one. An event
// bundle is read a line at a time instead (mirror.go, maxBundleSize).
const (
	observerTimeout     = 30 * time.Second
	observerDialTimeout = 10 * time.Second
	answerLimit         = 16 << 20
	// rateLimitRetries bounds the retries of a request answered 429; each
	// waits the Retry-After the node asked for, at most maxRetryAfter.
	rateLimitRetries = 5
	maxRetryAfter    = 10 * time.Second
)

// NodeURL turns an address, HOST:PORT or a URL with an optional path prefix
// (a node behind a reverse proxy), into the API's URL prefix.
func NodeURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: %w", addr, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--addr %q: want HOST:PORT or http(s)://HOST[:PORT][/PREFIX]", addr)
	}
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.EscapedPath(), "/"), nil
}

// NewObserverClient is a client of the node at addr with token, counting the
// bytes of its connections. It follows a redirect only to the scheme, host
// and port of addr, at most maxRedirects in a row (sameOriginRedirect): the
// token goes nowhere else. An answer fails once no byte of it arrived for
// observerTimeout. Its one error is an addr NodeURL refuses.
func NewObserverClient(addr, token string, opts ...ObserverOption) (*Client, error) {
	base, err := NodeURL(addr)
	if err != nil {
		return nil, err
	}
	var o observerOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{base: base, token: token, via: base, idle: observerTimeout}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if o.tls != nil {
		tr.TLSClientConfig = o.tls.Clone()
	}
	d := &net.Dialer{Timeout: observerDialTimeout}
	tr.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, c: c}, nil
	}
	c.client = &http.Client{Transport: tr, CheckRedirect: sameOriginRedirect}
	return c, nil
}

// ObserverOption adjusts a client of NewObserverClient.
type ObserverOption func(*observerOptions)

type observerOptions struct {
	tls *tls.Config
}

// WithTLSConfig has the client's HTTPS connections use config: its RootCAs
// to trust a node's own CA, its Certificates for a node that asks for
// client certificates. Without it (or with nil) they use Go's defaults.
func WithTLSConfig(config *tls.Config) ObserverOption {
	return func(o *observerOptions) { o.tls = config }
}

// NewClient reads through hc, a client that sends only to the node at base
// (the owner's channel to the node of a data dir), with token; via names the
// node in messages.
func NewClient(hc *http.Client, base, token, via string) *Client {
	return &Client{client: hc, base: base, token: token, via: via}
}

// Base is the URL prefix the client reads.
func (c *Client) Base() string { return c.base }

// Via names the node or host in messages.
func (c *Client) Via() string { return c.via }

// Transferred is the number of bytes read and written on the wire so far.
func (c *Client) Transferred() int64 { return c.read.Load() + c.written.Load() }

// Close closes the client's idle connections.
func (c *Client) Close() { c.client.CloseIdleConnections() }

// get fetches path and returns the body of a 200 answer, at most answerLimit
// bytes; any other answer is an error naming the node's message and code.
func (c *Client) get(ctx context.Context, path string) ([]byte, error) {
	body, err := c.open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, answerLimit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("GET %s from %s: read the answer: %w", path, c.via, err)
	case len(b) > answerLimit:
		return nil, fmt.Errorf("GET %s from %s: the answer is over %d bytes", path, c.via, answerLimit)
	}
	return b, nil
}

// open fetches path and returns the body of a 200 answer, for the caller to
// read and close; any other answer is an error naming the node's message and
// code (a *statusError). A 429 is asked again after its Retry-After, at most
// rateLimitRetries times.
func (c *Client) open(ctx context.Context, path string) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	wd := c.watch(cancel)
	fail := func(err error) (io.ReadCloser, error) {
		wd.stop()
		cancel(nil)
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
		if err != nil {
			return fail(fmt.Errorf("GET %s: %w", path, err))
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.client.Do(req)
		if err != nil {
			// The error names the URL, never the header that holds the token.
			return fail(fmt.Errorf("GET %s from %s: %w", path, c.via, stalledOr(ctx, err)))
		}
		if resp.StatusCode == http.StatusOK {
			return &watchedBody{ReadCloser: resp.Body, ctx: ctx, wd: wd, cancel: cancel}, nil
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
		resp.Body.Close()
		if err != nil {
			return fail(fmt.Errorf("GET %s from %s: read the answer: %w", path, c.via, stalledOr(ctx, err)))
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < rateLimitRetries {
			wd.stop()
			if err := sleepCtx(ctx, retryAfter(resp.Header.Get("Retry-After"))); err != nil {
				return fail(fmt.Errorf("GET %s from %s: %w", path, c.via, err))
			}
			wd.reset()
			continue
		}
		return fail(c.answerError(path, resp, body))
	}
}

// getJSON fetches path and decodes a 200 answer into out.
func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	body, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s from %s: decode the answer: %w", path, c.via, err)
	}
	return nil
}

// statusError is an answer other than 200, with the message answerError
// gives it; Transient tells a 5xx or 429 by its code.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

func (c *Client) answerError(path string, resp *http.Response, body []byte) error {
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	msg := resp.Status
	if json.Unmarshal(body, &e) == nil && e.Code != "" {
		msg = fmt.Sprintf("%s: %s (%s)", resp.Status, e.Error, e.Code)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		msg = fmt.Sprintf("the node at %s refused the token (%s); give an owner or observer token with --token or $CIVNODE_TOKEN", c.via, msg)
	case http.StatusForbidden:
		msg = fmt.Sprintf("the node at %s refused the token for %s (%s); the transparency endpoints take an owner or observer token", c.via, path, msg)
	default:
		msg = fmt.Sprintf("GET %s from %s: %s", path, c.via, msg)
	}
	return &statusError{code: resp.StatusCode, msg: msg}
}

// retryAfter reads a Retry-After of whole seconds, at least one second and at
// most maxRetryAfter.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s < 1 {
		s = 1
	}
	return min(time.Duration(s)*time.Second, maxRetryAfter)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// countingConn counts what crosses a connection into its client's totals.
type countingConn struct {
	net.Conn
	c *Client
}

func (cc *countingConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	cc.c.read.Add(int64(n))
	return n, err
}

func (cc *countingConn) Write(p []byte) (int, error) {
	n, err := cc.Conn.Write(p)
	cc.c.written.Add(int64(n))
	return n, err
}
