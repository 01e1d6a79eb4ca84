package doctor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// checkPort says whether serve could listen on --addr, and when something
// already does, whether it is this data dir's node. That is decided by the
// node proof: the process at --addr must sign a fresh nonce
// with node.key. Only then is it sent the owner token, for GET /v1/state; a
// process that merely answers like a node never is.
func (d *checker) checkPort(ctx context.Context) Check {
	c := Check{Name: "port"}
	host, port, err := net.SplitHostPort(d.addr)
	if err != nil {
		return problem(c, statusFail, fmt.Sprintf("--addr %s: %v", d.addr, err), "")
	}
	if port == "0" {
		c.Status, c.Detail = statusOK, d.addr+": serve picks a free port when it starts"
		return c
	}
	ln, err := net.Listen("tcp", d.addr)
	if err == nil {
		ln.Close()
		c.Status, c.Detail = statusOK, d.addr+" is free: serve can listen on it"
		if d.inUse {
			c.Detail += " (so the process that holds this data dir does not listen there)"
		}
		return c
	}
	switch {
	case errors.Is(err, syscall.EACCES):
		return problem(c, statusFail, fmt.Sprintf("cannot listen on %s: %v (ports below 1024 need privileges)", d.addr, err),
			"give serve a port above 1023, e.g. --addr "+net.JoinHostPort(host, "7777"))
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return problem(c, statusFail, fmt.Sprintf("cannot listen on %s: %v (no interface of this machine has that address)", d.addr, err),
			"give serve an address of this machine, e.g. --addr 127.0.0.1:"+port)
	case !errors.Is(err, syscall.EADDRINUSE):
		return problem(c, statusFail, fmt.Sprintf("cannot listen on %s: %v", d.addr, err), "")
	}
	taken := fmt.Sprintf("lsof -nP -iTCP:%s -sTCP:LISTEN shows which process holds it; stop it, or run the node at another address: civnode serve --addr HOST:PORT (and doctor --addr HOST:PORT)", port)
	if d.mirror {
		// A mirror holds no key, so nothing can prove that the process at
		// addr is this mirror; it is sent nothing, and a held port is only
		// worth knowing.
		detail := d.addr + " is in use; a mirror holds no key to prove that it is the process there, so doctor cannot tell whether it is this mirror (it was sent nothing)"
		if d.inUse {
			detail += "; this mirror runs (see node)"
		}
		return problem(c, statusWarn, detail, "nothing to do if this mirror serves at that address; otherwise "+taken)
	}
	if d.key == nil {
		return problem(c, statusFail, d.addr+" is in use, and without node.key doctor cannot tell whether by this data dir's node", taken)
	}
	ctx, cancel := context.WithTimeout(ctx, netTimeout)
	defer cancel()
	pub := d.key.Public().(ed25519.PublicKey)
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return problem(c, statusFail, fmt.Sprintf("%s is in use, but a connection to it fails: %v", d.addr, err), taken)
	}
	// The token is sent only once the process has proved it is this node,
	// and only with GET /v1/state.
	tok, tokErr := datadir.LoadControlToken(d.dir.TokenPath(), d.quiet())
	ch, err := d.opts.Prove(ctx, conn, d.addr, pub, tok)
	if err != nil {
		conn.Close()
		return problem(c, statusFail, fmt.Sprintf("%s is held by a process that is not this data dir's node (asked to prove that it holds node.key, %v); it was sent no token", d.addr, err), taken)
	}
	defer ch.Close()
	detail := d.addr + " is served by this node: it proved it holds node.key"
	status, body, err := ch.Get(ctx, "/v1/health", false)
	if err != nil {
		return problem(c, statusFail, fmt.Sprintf("%s, but GET /v1/health fails: %v", detail, err), "look for the cause in the node's log")
	}
	var health struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &health); err != nil || health.Status != "ok" {
		// The node check says why; the port is this node's all the same.
		detail += fmt.Sprintf(", and GET /v1/health answers %d", status)
	} else {
		detail += `, and GET /v1/health answers {"status":"ok"}`
	}
	if tokErr == nil {
		if status, body, err := ch.Get(ctx, "/v1/state", true); err == nil && status == http.StatusOK {
			var st struct {
				Identity struct {
					NodeDID string `json:"node_did"`
				} `json:"identity"`
			}
			if json.Unmarshal(body, &st) == nil {
				if want := eventlog.DIDKey(pub); st.Identity.NodeDID != want {
					return problem(c, statusFail, fmt.Sprintf("%s, but GET /v1/state names node %s", detail, st.Identity.NodeDID), "restart the node")
				}
				detail += ", GET /v1/state names " + st.Identity.NodeDID
			}
		}
	}
	c.Status, c.Detail = statusOK, detail
	return c
}

// checkRegistry asks the registry for its agent list as the node does: signed
// with node.key and with registry.credential, one attempt, within
// netTimeout. Without node.key it makes an unsigned GET, which says
// whether the registry answers at all. Every problem here is a warning: the
// node starts and serves everything else without the registry; only the
// registry routes (/v1/core/servicenet/…) answer 502 until it is back.
func (d *checker) checkRegistry(ctx context.Context) Check {
	c := Check{Name: "registry"}
	if d.mirror {
		// serve --mirror-of proxies no registry, whatever --registry-url says.
		c.Status, c.Detail = statusOK, "not used: serve --mirror-of proxies no agent registry"
		return c
	}
	if d.registryURL == "" {
		// The operator turned the proxy off; nothing is failing.
		c.Status, c.Detail = statusOK, `not configured (--registry-url ""): the registry proxy is off, its routes answer 503 registry_not_configured`
		return c
	}
	// A little longer than the client's own bound, so that its message, which
	// says what failed, is the one reported.
	ctx, cancel := context.WithTimeout(ctx, netTimeout+time.Second)
	defer cancel()
	if d.key == nil {
		return d.checkRegistryUnsigned(ctx)
	}
	key := d.key
	cl, err := servicenet.New(servicenet.Config{
		BaseURL:        d.registryURL,
		Credential:     d.credential,
		NodeDID:        eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign:           func(msg []byte) []byte { return ed25519.Sign(key, msg) },
		ConnectTimeout: netTimeout,
		ReadTimeout:    netTimeout,
		Retries:        -1,
		CardTTL:        -1,
		Logger:         d.quiet(),
	})
	if err != nil {
		return problem(c, statusWarn, fmt.Sprintf("--registry-url: %v", err), "")
	}
	url := cl.BaseURL() + "/v1/agents"
	start := time.Now()
	agents, err := cl.ListAgents(ctx)
	took := elapsed(start)
	if err == nil {
		c.Status, c.Detail = statusOK, fmt.Sprintf("GET %s answered 200 with %s in %s", url, plural(len(agents), "agent"), took)
		return c
	}
	var e *servicenet.Error
	switch {
	case !errors.As(err, &e):
		return problem(c, statusWarn, fmt.Sprintf("GET %s: %v", url, err), "")
	case e.Status == 0:
		return problem(c, statusWarn, fmt.Sprintf("GET %s: no answer (%s): %s; the node runs without it, only the registry routes fail", url, took, e.Message),
			"check --registry-url, DNS, the firewall and HTTPS_PROXY; serve --registry-url must name the same registry")
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return problem(c, statusWarn, fmt.Sprintf("GET %s answered %d in %s: the registry refused the node's signature or credential", url, e.Status, took),
			"check "+shellQuote(filepath.Join(string(d.dir), "registry.credential"))+" (docs/servicenet.md)")
	default:
		return problem(c, statusWarn, fmt.Sprintf("GET %s answered %d in %s: %s", url, e.Status, took, e.Message),
			"check that --registry-url is the registry's base URL")
	}
}

// checkRegistryUnsigned is checkRegistry for a data dir without a node key:
// any HTTP answer shows the registry can be reached.
func (d *checker) checkRegistryUnsigned(ctx context.Context) Check {
	c := Check{Name: "registry"}
	client := &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       netTimeout,
	}
	defer client.CloseIdleConnections()
	// New has checked the URL; it has no trailing slash there.
	cl, err := servicenet.New(servicenet.Config{BaseURL: d.registryURL, Sign: func([]byte) []byte { return nil }})
	if err != nil {
		return problem(c, statusWarn, fmt.Sprintf("--registry-url: %v", err), "")
	}
	url := cl.BaseURL() + "/v1/agents"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return problem(c, statusWarn, fmt.Sprintf("GET %s: %v", url, err), "")
	}
	start := time.Now()
	resp, err := client.Do(req)
	took := elapsed(start)
	if err != nil {
		return problem(c, statusWarn, fmt.Sprintf("GET %s: no answer (%s): %v; the node runs without it, only the registry routes fail", url, took, err),
			"check --registry-url, DNS, the firewall and HTTPS_PROXY")
	}
	resp.Body.Close()
	detail := fmt.Sprintf("GET %s answered %d in %s (unsigned: there is no node.key to sign with)", url, resp.StatusCode, took)
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusNotFound {
		return problem(c, statusWarn, detail, "check that --registry-url is the registry's base URL")
	}
	c.Status, c.Detail = statusOK, detail
	return c
}
