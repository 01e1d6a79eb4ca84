package servicenettest

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/registrydev"
)

// Route names one of the registry's four endpoints.
type Route = registrydev.Route

// The registry's routes (docs/servicenet.md). RouteUnknown is any other request, which
// the fake answers 404 and records all the same.
const (
	RouteList    = registrydev.RouteList
	RouteCard    = registrydev.RouteCard
	RouteInvoke  = registrydev.RouteInvoke
	RouteTask    = registrydev.RouteTask
	RouteUnknown = registrydev.RouteUnknown
)

// Options configures New. The zero value checks no credential.
type Options struct {
	// NodeKey, when set, makes the fake verify X-Node-Signature of every
	// request over servicenet.SigningBytes and X-Node-Timestamp's format; a
	// request that fails is a test error.
	NodeKey ed25519.PublicKey
	// NodeDID, when set, must be every request's X-Node-DID.
	NodeDID string
	// Credential, when set, must be every request's bearer
	// (Authorization: Bearer <Credential>).
	Credential string
	// Now is the clock payments' validity windows are checked against;
	// default time.Now.
	Now func() time.Time
}

// Request is one request as the fake received it.
type Request struct {
	Method string
	// Path is the escaped path as sent on the wire.
	Path  string
	Route Route
	// AgentID and TaskID are the path's ids, unescaped; empty when the route
	// has none or the path matched no route.
	AgentID, TaskID string
	Header          http.Header
	Body            []byte
}

// Registry is a running fake registry: registrydev's routes over the agents
// a test adds, with the test's faults in front. Its methods are safe for
// concurrent use, also while requests are being served.
type Registry struct {
	// URL is the registry's base URL, for servicenet.Config.BaseURL.
	URL string

	tb   testing.TB
	opts Options
	srv  *httptest.Server
	reg  *registrydev.Registry

	mu        sync.Mutex
	order     []string
	agents    map[string]*agentState
	requests  []Request
	settled   []Settlement
	refusals  []string
	listFault *Fault
	listHits  int
}

type agentState struct {
	Agent
	hits map[Route]int
}

// New starts a fake registry that tb closes at its end.
func New(tb testing.TB, opts Options) *Registry {
	tb.Helper()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{tb: tb, opts: opts, agents: map[string]*agentState{}}
	r.reg = registrydev.NewRegistry(directory{r}, registrydev.RegistryOptions{Now: opts.Now, Settle: r.settle, Refused: r.refuse})
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	tb.Cleanup(r.srv.Close)
	return r
}

// Close stops the fake; tests rarely need it before the cleanup does it.
func (r *Registry) Close() { r.srv.Close() }

// Add adds an agent, or replaces the one with its ID.
func (r *Registry) Add(a Agent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.agents[a.ID]; !ok {
		r.order = append(r.order, a.ID)
	}
	r.agents[a.ID] = &agentState{Agent: a, hits: map[Route]int{}}
}

// Update edits agent id in place; its request counts, which Fault.Times
// reads, are kept.
func (r *Registry) Update(id string, edit func(*Agent)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[id]
	if !ok {
		r.tb.Fatalf("servicenettest: Update of unknown agent %q", id)
	}
	edit(&a.Agent)
}

// SetListFault makes GET /v1/agents answer f; nil restores the list.
func (r *Registry) SetListFault(f *Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listFault, r.listHits = f, 0
}

// Requests returns every request received so far, oldest first.
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Request, len(r.requests))
	copy(out, r.requests)
	return out
}

// Count returns how many requests reached route, for agent agentID, or for any
// agent when agentID is "".
func (r *Registry) Count(route Route, agentID string) int {
	n := 0
	for _, q := range r.Requests() {
		if q.Route == route && (agentID == "" || q.AgentID == agentID) {
			n++
		}
	}
	return n
}

// PaidAttempts counts the invokes that carried a payment header, verified or
// not.
func (r *Registry) PaidAttempts() int {
	n := 0
	for _, q := range r.Requests() {
		if q.Header.Get(registrydev.HeaderXPayment) != "" || q.Header.Get(registrydev.HeaderPaymentSignature) != "" {
			n++
		}
	}
	return n
}

// Invocations returns the invoke bodies agentID received, decoded.
func (r *Registry) Invocations(agentID string) []Invocation {
	var out []Invocation
	for _, q := range r.Requests() {
		if q.Route != RouteInvoke || q.AgentID != agentID {
			continue
		}
		var in Invocation
		if json.Unmarshal(q.Body, &in) == nil {
			out = append(out, in)
		}
	}
	return out
}

// Invocation is an invoke body as the registry reads it.
type Invocation = registrydev.Invocation

// Settlements returns the payments the fake verified and settled.
func (r *Registry) Settlements() []Settlement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Settlement(nil), r.settled...)
}

// Refusals returns why each refused payment was refused.
func (r *Registry) Refusals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

// TaskPolls returns how many times the task has been fetched.
func (r *Registry) TaskPolls(agentID, taskID string) int { return r.reg.TaskPolls(agentID, taskID) }

// serve records the request, checks the node credential, answers with a
// fault when one applies and otherwise as registrydev's registry.
func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 2<<20))
	if err != nil {
		http.Error(w, `{"error":"read body"}`, http.StatusBadRequest)
		return
	}
	route, agentID, taskID := parsePath(req.Method, req.URL.EscapedPath())
	r.mu.Lock()
	r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.EscapedPath(), Route: route,
		AgentID: agentID, TaskID: taskID, Header: req.Header.Clone(), Body: body})
	r.mu.Unlock()
	r.checkCredential(req, body)
	f, hit, noReceipt := r.fault(route, agentID)
	if f.apply(w, req, hit) {
		return
	}
	if noReceipt {
		w = receiptless{w}
	}
	r.reg.Serve(w, req, route, agentID, taskID, body)
}

// parsePath routes an escaped path as registrydev does; a path whose ids
// are empty or do not unescape is RouteUnknown.
func parsePath(method, path string) (route Route, agentID, taskID string) {
	route, agentID, taskID = registrydev.ParsePath(method, path)
	if route != RouteList && agentID == "" || route == RouteTask && taskID == "" {
		return RouteUnknown, "", ""
	}
	return route, agentID, taskID
}

// fault counts a request of route and returns the fault set for it, with
// the request's number on its route, and whether a paid answer goes out
// without its receipt. An unknown agent has no fault and no count.
func (r *Registry) fault(route Route, agentID string) (f *Fault, hit int, noReceipt bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if route == RouteList {
		r.listHits++
		return r.listFault, r.listHits, false
	}
	a, ok := r.agents[agentID]
	if !ok || route == RouteUnknown {
		return nil, 0, false
	}
	a.hits[route]++
	switch route {
	case RouteCard:
		f = a.CardFault
	case RouteInvoke:
		f, noReceipt = a.InvokeFault, a.Price != nil && a.Price.NoReceipt
	case RouteTask:
		f = a.TaskFault
	}
	return f, a.hits[route], noReceipt
}

// checkCredential verifies the node's own credential (docs/servicenet.md) as a
// registry would, when the test gave the node's key.
func (r *Registry) checkCredential(req *http.Request, body []byte) {
	o := r.opts
	where := req.Method + " " + req.URL.EscapedPath()
	if o.Credential != "" {
		if got := req.Header.Get("Authorization"); got != "Bearer "+o.Credential {
			r.tb.Errorf("servicenettest: %s: Authorization is not the node's registry credential", where)
		}
	}
	if o.NodeDID != "" {
		if got := req.Header.Get("X-Node-DID"); got != o.NodeDID {
			r.tb.Errorf("servicenettest: %s: X-Node-DID = %q, want %q", where, got, o.NodeDID)
		}
	}
	if o.NodeKey == nil {
		return
	}
	ts := req.Header.Get("X-Node-Timestamp")
	if _, err := time.Parse("2006-01-02T15:04:05Z", ts); err != nil {
		r.tb.Errorf("servicenettest: %s: X-Node-Timestamp %q is not RFC 3339 UTC seconds", where, ts)
		return
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(req.Header.Get("X-Node-Signature"))
	if err != nil || !ed25519.Verify(o.NodeKey, servicenet.SigningBytes(req.Method, req.URL.EscapedPath(), ts, body), sig) {
		r.tb.Errorf("servicenettest: %s: X-Node-Signature does not verify with the node key", where)
	}
}

// settle records a payment that verified, unless the agent's price refuses
// every payment.
func (r *Registry) settle(agentID string, s Settlement) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.agents[agentID]; ok && a.Price != nil && a.Price.Refuse != "" {
		return errors.New(a.Price.Refuse)
	}
	r.settled = append(r.settled, s)
	return nil
}

func (r *Registry) refuse(reason string) {
	r.mu.Lock()
	r.refusals = append(r.refusals, reason)
	r.mu.Unlock()
}

// directory is the test's agents as registrydev's registry reads them.
type directory struct{ r *Registry }

func (d directory) Agents() []registrydev.Agent {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	out := make([]registrydev.Agent, 0, len(d.r.order))
	for _, id := range d.r.order {
		out = append(out, d.r.agents[id].dev())
	}
	return out
}

func (d directory) Agent(id string) (registrydev.Agent, bool) {
	d.r.mu.Lock()
	defer d.r.mu.Unlock()
	a, ok := d.r.agents[id]
	if !ok {
		return registrydev.Agent{}, false
	}
	return a.dev(), true
}

// receiptless drops the settlement receipt from a paid answer.
type receiptless struct{ http.ResponseWriter }

func (w receiptless) WriteHeader(status int) {
	w.Header().Del(registrydev.HeaderPaymentResponse)
	w.Header().Del(registrydev.HeaderXPaymentResponse)
	w.ResponseWriter.WriteHeader(status)
}
