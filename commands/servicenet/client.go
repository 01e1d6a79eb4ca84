package servicenet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/civnode/civnode/internal/logkey"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures New. Zero values take the defaults named beside them.
type Config struct {
	// BaseURL is the registry, e.g. https://registry.civnode.net: http or
	// https, no user info, query or fragment; a path prefix is allowed.
	BaseURL string
	// Credential is the node's registry bearer credential
	// (<data-dir>/registry.credential); "" sends no Authorization header.
	Credential string
	// NodeDID is sent as X-Node-DID.
	NodeDID string
	// Sign is an Ed25519 signature with the node key; required.
	Sign func(msg []byte) []byte
	// HTTPClient replaces the default client, one with its own transport that
	// applies ConnectTimeout to dialling and the TLS handshake and
	// ReadTimeout to the response headers. Redirects are never followed
	// either way.
	HTTPClient *http.Client
	// ConnectTimeout bounds dialling the registry; default 5s.
	ConnectTimeout time.Duration
	// ReadTimeout bounds each attempt as a whole, body included; default 30s.
	ReadTimeout time.Duration
	// CardTTL is how long a card is reused; default 60s, <0 disables caching.
	CardTTL time.Duration
	// Retries is the extra attempts of a read (ListAgents, Card, GetTask);
	// default 3, <0 means none.
	Retries int
	// BackoffBase is the first retry's backoff ceiling, doubling with full
	// jitter up to BackoffMax; defaults 200ms and 5s.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Now is the clock of the signature timestamps, the card TTL and
	// Retry-After dates; default time.Now.
	Now func() time.Time
	// Logger receives Debug lines per attempt and retry; default slog.Default().
	Logger *slog.Logger
	// Observe, if set, is told of every attempt's outcome (observe.go), for
	// the node's metrics. It must be quick and safe for concurrent use.
	Observe func(Attempt)
}

// Defaults of Config.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultReadTimeout    = 30 * time.Second
	DefaultCardTTL        = 60 * time.Second
	DefaultRetries        = 3
	DefaultBackoffBase    = 200 * time.Millisecond
	DefaultBackoffMax     = 5 * time.Second
)

const (
	// maxAnswerBytes bounds a registry answer, the node's own body limit
	// (docs/api.md): nothing larger could be relayed anyway.
	maxAnswerBytes = 1 << 20
	// maxCachedCards bounds the card cache, so listing a huge registry
	// agent by agent cannot grow the node's memory without end.
	maxCachedCards = 1024
)

// PaymentHeader is the x402 header of a paid retry: Name is "X-PAYMENT" (v1)
// or "PAYMENT-SIGNATURE" (v2), Value its base64 value.
type PaymentHeader struct{ Name, Value string }

// Client calls one registry. It is safe for concurrent use.
type Client struct {
	baseURL    string // scheme://host[/prefix], no trailing slash
	credential string
	nodeDID    string
	sign       func([]byte) []byte
	http       *http.Client

	readTimeout time.Duration
	retries     int
	backoffBase time.Duration
	backoffMax  time.Duration
	now         func() time.Time
	log         *slog.Logger
	observe     func(Attempt)
	cards       *cardCache // nil when caching is off

	// Seams for the retry tests.
	sleep  func(context.Context, time.Duration) error
	jitter func(time.Duration) time.Duration
}

// New checks cfg and returns a client of its registry.
func New(cfg Config) (*Client, error) {
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.Sign == nil {
		return nil, errors.New("registry client: Sign is required")
	}
	// The credential file may end in a newline; anything else that is not
	// visible ASCII could not travel in a header.
	credential := strings.TrimSpace(cfg.Credential)
	for i := 0; i < len(credential); i++ {
		if credential[i] < 0x21 || credential[i] > 0x7e {
			return nil, errors.New("registry client: the registry credential holds a character that is not visible ASCII")
		}
	}
	c := &Client{
		baseURL:     base,
		credential:  credential,
		nodeDID:     cfg.NodeDID,
		sign:        cfg.Sign,
		readTimeout: orDefault(cfg.ReadTimeout, DefaultReadTimeout),
		retries:     cfg.Retries,
		backoffBase: orDefault(cfg.BackoffBase, DefaultBackoffBase),
		backoffMax:  orDefault(cfg.BackoffMax, DefaultBackoffMax),
		now:         cfg.Now,
		log:         cfg.Logger,
		observe:     cfg.Observe,
		sleep:       sleepContext,
		jitter:      fullJitter,
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.http = withoutRedirects(cfg.HTTPClient, orDefault(cfg.ConnectTimeout, DefaultConnectTimeout), c.readTimeout)
	if cfg.CardTTL >= 0 {
		c.cards = newCardCache(orDefault(cfg.CardTTL, DefaultCardTTL), maxCachedCards, c.now)
	}
	return c, nil
}

// parseBaseURL checks the registry's URL and returns it without a trailing
// slash. User info is refused: it would be sent as Basic auth beside the
// node's own credential, and printed wherever the URL is.
func parseBaseURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("registry client: BaseURL is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("registry client: BaseURL is not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("registry client: BaseURL must be http or https")
	case u.Host == "" || u.Opaque != "":
		return "", errors.New("registry client: BaseURL has no host")
	case u.User != nil:
		return "", errors.New("registry client: BaseURL must not carry user info")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("registry client: BaseURL must not carry a query or fragment")
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// withoutRedirects returns a client that never follows a redirect. A
// redirect would resend an invoke body, OAuth token and payment included, to
// wherever the registry points, and the signature covers the original path
// anyway; the 3xx is reported as a malformed answer instead.
func withoutRedirects(hc *http.Client, connect, read time.Duration) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	} else {
		c.Transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   connect,
			ResponseHeaderTimeout: read,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// BaseURL is the registry's URL as the client uses it.
func (c *Client) BaseURL() string { return c.baseURL }

// ListAgents is GET {base}/v1/agents.
func (c *Client) ListAgents(ctx context.Context) ([]Summary, error) {
	cl := &call{op: OpListAgents, method: http.MethodGet, path: "/v1/agents", idempotent: true}
	ans, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := c.check(cl, ans); err != nil {
		return nil, err
	}
	list, err := decodeAgentList(ans.body)
	if err != nil {
		return nil, c.malformed(cl, ans, err)
	}
	return list, nil
}

// Card is GET {base}/v1/agents/{id}, reused for CardTTL.
func (c *Client) Card(ctx context.Context, agentID string) (Card, error) {
	if err := checkID("agent_id", agentID); err != nil {
		return Card{}, err
	}
	if c.cards == nil {
		return c.fetchCard(ctx, agentID)
	}
	return c.cards.get(ctx, agentID, func(ctx context.Context) (Card, error) {
		return c.fetchCard(ctx, agentID)
	})
}

func (c *Client) fetchCard(ctx context.Context, agentID string) (Card, error) {
	cl := &call{
		op: OpCard, method: http.MethodGet, path: "/v1/agents/" + url.PathEscape(agentID), idempotent: true,
		unknown: fmt.Sprintf("agent %q", agentID),
	}
	ans, err := c.do(ctx, cl)
	if err != nil {
		return Card{}, err
	}
	if err := c.check(cl, ans); err != nil {
		return Card{}, err
	}
	card, err := decodeCard(ans.body, agentID)
	if err != nil {
		return Card{}, c.malformed(cl, ans, err)
	}
	return card, nil
}

// Invoke is POST {base}/v1/agents/{id}/invoke, with payment on the paid retry
// after a 402. It is made exactly once: a lost answer may still have charged
// or started work, which the caller must not repeat blindly.
func (c *Client) Invoke(ctx context.Context, agentID string, req InvokeRequest, payment *PaymentHeader) (InvokeResponse, error) {
	if err := checkID("agent_id", agentID); err != nil {
		return InvokeResponse{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return InvokeResponse{}, fmt.Errorf("encode invoke request: %w", err)
	}
	cl := &call{
		op: OpInvoke, method: http.MethodPost, path: "/v1/agents/" + url.PathEscape(agentID) + "/invoke", body: body,
		unknown: fmt.Sprintf("agent %q", agentID),
		secrets: []string{req.AuthToken},
	}
	if payment != nil {
		if !strings.EqualFold(payment.Name, headerXPayment) && !strings.EqualFold(payment.Name, headerPaymentSignature) || payment.Value == "" {
			return InvokeResponse{}, errors.New("invoke: payment header must be a non-empty X-PAYMENT or PAYMENT-SIGNATURE")
		}
		cl.payment = payment
		cl.secrets = append(cl.secrets, payment.Value)
	}
	ans, err := c.do(ctx, cl)
	if err != nil {
		return InvokeResponse{}, err
	}
	if ans.status == http.StatusPaymentRequired {
		return InvokeResponse{}, c.paymentRequired(cl, ans)
	}
	if err := c.check(cl, ans); err != nil {
		return InvokeResponse{}, err
	}
	r, err := decodeInvoke(ans.body)
	if err != nil {
		return InvokeResponse{}, c.malformed(cl, ans, err)
	}
	if r.Settlement, err = ParseSettlementResponse(ans.header); err != nil {
		return InvokeResponse{}, c.malformed(cl, ans, err)
	}
	return r, nil
}

// paymentRequired reads an invoke's 402: the registry's terms, or a refusal
// of the payment that was sent.
func (c *Client) paymentRequired(cl *call, ans *answer) error {
	if ans.oversize {
		return oversize(ans)
	}
	if cl.payment != nil {
		// A refused payment may come back as a settlement receipt that says
		// why (success false), without the terms again (x402 v2).
		if s, err := ParseSettlementResponse(ans.header); err == nil && s != nil && !s.Success {
			msg := "the registry refused the payment"
			if reason := safeText(s.ErrorReason, c.secrets(cl)); reason != "" {
				msg += ": " + reason
			}
			return &Error{Kind: ErrPaymentRequired, Status: ans.status, Message: msg}
		}
	}
	pr, err := ParsePaymentRequired(ans.header, ans.body)
	if err != nil {
		return c.malformed(cl, ans, err)
	}
	msg := "the agent requires payment"
	if cl.payment != nil {
		msg = "the registry refused the payment"
	}
	if reason := safeText(pr.Error, c.secrets(cl)); reason != "" {
		msg += ": " + reason
	}
	return &Error{Kind: ErrPaymentRequired, Status: ans.status, Message: msg, Payment: pr}
}

// GetTask is POST {base}/v1/agents/{id}/tasks/{task_id}/get with body {}. It
// only reads, so it retries like a GET.
func (c *Client) GetTask(ctx context.Context, agentID, taskID string) (Task, error) {
	if err := checkID("agent_id", agentID); err != nil {
		return Task{}, err
	}
	if err := checkID("task_id", taskID); err != nil {
		return Task{}, err
	}
	cl := &call{
		op:     OpGetTask,
		method: http.MethodPost,
		path:   "/v1/agents/" + url.PathEscape(agentID) + "/tasks/" + url.PathEscape(taskID) + "/get",
		body:   []byte("{}"), idempotent: true,
		unknown: fmt.Sprintf("task %q of agent %q", taskID, agentID),
	}
	ans, err := c.do(ctx, cl)
	if err != nil {
		return Task{}, err
	}
	if err := c.check(cl, ans); err != nil {
		return Task{}, err
	}
	t, err := decodeTask(ans.body, taskID)
	if err != nil {
		return Task{}, c.malformed(cl, ans, err)
	}
	return t, nil
}

// call is one registry operation.
type call struct {
	op     string // Op*, for Config.Observe
	method string
	path   string // escaped, below the base URL
	body   []byte // nil for a GET
	// payment is the x402 header of a paid invoke.
	payment    *PaymentHeader
	idempotent bool
	// unknown names what a 404 says the registry does not know; "" when a
	// 404 can only mean the registry broke its contract.
	unknown string
	// secrets are the call's own secrets besides the node credential, kept
	// out of every message even if the registry echoes them.
	secrets []string
}

// answer is one registry response, read in full.
type answer struct {
	status     int
	header     http.Header
	body       []byte
	oversize   bool          // the body passed maxAnswerBytes and was dropped
	retryAfter time.Duration // -1 when not given
	attempts   int
}

// exchange makes one attempt of cl under its own ReadTimeout.
func (c *Client) exchange(ctx context.Context, cl *call, attempt int) (*answer, error) {
	actx, cancel := context.WithTimeout(ctx, c.readTimeout)
	defer cancel()
	var body io.Reader = http.NoBody
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(actx, cl.method, c.baseURL+cl.path, body)
	if err != nil {
		return nil, fmt.Errorf("build registry request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.payment != nil {
		req.Header.Set(cl.payment.Name, cl.payment.Value)
	}
	if err := c.authenticate(req, cl.body, c.now()); err != nil {
		return nil, fmt.Errorf("sign registry request: %w", err)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		err = c.transportError(ctx, cl, err)
		c.log.Debug("registry attempt", logkey.Method, cl.method, logkey.Path, cl.path, logkey.Attempt, attempt, logkey.Err, err)
		c.observed(cl, start, outcomeOfError(err))
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		err = c.transportError(ctx, cl, err)
		c.log.Debug("registry attempt", logkey.Method, cl.method, logkey.Path, cl.path, logkey.Attempt, attempt, logkey.Status, resp.StatusCode, logkey.Err, err)
		c.observed(cl, start, outcomeOfError(err))
		return nil, err
	}
	c.log.Debug("registry attempt", logkey.Method, cl.method, logkey.Path, cl.path, logkey.Attempt, attempt, logkey.Status, resp.StatusCode)
	c.observed(cl, start, outcomeOfStatus(resp.StatusCode))
	ans := &answer{
		status:     resp.StatusCode,
		header:     resp.Header,
		body:       data,
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now()),
		attempts:   attempt,
	}
	if len(data) > maxAnswerBytes {
		ans.body, ans.oversize = nil, true
	}
	return ans, nil
}

// transportError classifies a failed attempt: the caller's own end, a
// time-out, or a registry that cannot be reached.
func (c *Client) transportError(ctx context.Context, cl *call, err error) error {
	if ctx.Err() != nil {
		return callerDone(ctx)
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() {
		return &Error{Kind: ErrTimeout, Message: fmt.Sprintf("the registry did not answer within %s", c.readTimeout)}
	}
	// url.Error repeats the method and URL; the cause is what a reader needs.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return &Error{Kind: ErrUnavailable, Message: "cannot reach the registry: " + safeText(err.Error(), c.secrets(cl))}
}

// check maps an answer that is not a success to its *Error; nil for a 2xx
// whose body can be read. An invoke's 402 never gets here.
func (c *Client) check(cl *call, ans *answer) error {
	s := ans.status
	switch {
	case s >= 200 && s <= 299:
		if ans.oversize {
			return oversize(ans)
		}
		return nil
	case s == http.StatusNotFound && cl.unknown != "":
		return &Error{Kind: ErrNotFound, Status: s, Message: "the registry does not know " + cl.unknown}
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		msg := ""
		if !ans.oversize {
			msg = registryMessage(ans.body, c.secrets(cl))
		}
		if msg == "" {
			msg = fmt.Sprintf("the registry refused the request (%d)", s)
		}
		return &Error{Kind: ErrRejected, Status: s, Message: msg}
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return &Error{Kind: ErrUnavailable, Status: s, Message: "the registry refused the node's credential"}
	case retryableStatus(s):
		e := &Error{Kind: ErrUnavailable, Status: s, Message: fmt.Sprintf("the registry answered %d", s)}
		if ans.attempts > 1 {
			e.Message += fmt.Sprintf(" (%d attempts)", ans.attempts)
		}
		if ans.retryAfter >= 0 {
			e.RetryAfter = ans.retryAfter
		}
		return e
	case s >= 300 && s <= 399:
		return &Error{Kind: ErrMalformed, Status: s, Message: fmt.Sprintf("the registry answered %d; redirects are not followed", s)}
	default:
		return &Error{Kind: ErrMalformed, Status: s, Message: fmt.Sprintf("the registry answered %d %s, which its contract does not have here", s, cl.method+" "+cl.path)}
	}
}

// secrets lists what no message of cl may show.
func (c *Client) secrets(cl *call) []string {
	return append([]string{c.credential}, cl.secrets...)
}

// malformed reports an answer outside the contract. The message may quote
// the registry, so it is made safe like any registry text.
func (c *Client) malformed(cl *call, ans *answer, err error) *Error {
	return &Error{Kind: ErrMalformed, Status: ans.status, Message: safeText(err.Error(), c.secrets(cl))}
}

func oversize(ans *answer) *Error {
	return &Error{Kind: ErrMalformed, Status: ans.status, Message: "registry answer larger than 1 MiB"}
}
