package servicenettest

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
)

// Route names one of the registry's four endpoints.
type Route string

// The registry's routes (docs/servicenet.md). RouteUnknown is any other request, which
// the fake answers 404 and records all the same.
const (
	RouteList    Route = "list"
	RouteCard    Route = "card"
	RouteInvoke  Route = "invoke"
	RouteTask    Route = "task"
	RouteUnknown Route = "unknown"
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

// Registry is a running fake registry. Its methods are safe for concurrent
// use, also while requests are being served.
type Registry struct {
	// URL is the registry's base URL, for servicenet.Config.BaseURL.
	URL string

	tb   testing.TB
	opts Options
	srv  *httptest.Server

	mu        sync.Mutex
	order     []string
	agents    map[string]*agentState
	tasks     map[taskKey]*task
	nonces    map[string]bool
	requests  []Request
	settled   []Settlement
	refusals  []string
	listFault *Fault
	listHits  int
	seq       int
}

type agentState struct {
	Agent
	hits map[Route]int
}

type taskKey struct{ agentID, taskID string }

type task struct {
	async Async
	polls int
}

// New starts a fake registry that tb closes at its end.
func New(tb testing.TB, opts Options) *Registry {
	tb.Helper()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{tb: tb, opts: opts, agents: map[string]*agentState{}, tasks: map[taskKey]*task{},
		nonces: map[string]bool{}}
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
		if q.Header.Get(headerXPayment) != "" || q.Header.Get(headerPaymentSignature) != "" {
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
type Invocation struct {
	Message   string          `json:"message"`
	Input     json.RawMessage `json:"input"`
	AuthToken string          `json:"auth_token"`
}

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
func (r *Registry) TaskPolls(agentID, taskID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.tasks[taskKey{agentID, taskID}]; ok {
		return t.polls
	}
	return 0
}

// serve records the request, checks the node credential and routes it.
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

	switch route {
	case RouteList:
		r.serveList(w, req)
	case RouteCard:
		r.serveCard(w, req, agentID)
	case RouteInvoke:
		r.serveInvoke(w, req, agentID, body)
	case RouteTask:
		r.serveTask(w, req, agentID, taskID, body)
	default:
		writeJSON(w, http.StatusNotFound, errorBody("no such endpoint"))
	}
}

// parsePath routes an escaped path; ids are unescaped.
func parsePath(method, path string) (route Route, agentID, taskID string) {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(seg) < 2 || seg[0] != "v1" || seg[1] != "agents" {
		return RouteUnknown, "", ""
	}
	id := func(s string) (string, bool) {
		v, err := url.PathUnescape(s)
		return v, err == nil && v != ""
	}
	switch {
	case len(seg) == 2 && method == http.MethodGet:
		return RouteList, "", ""
	case len(seg) == 3 && method == http.MethodGet:
		if a, ok := id(seg[2]); ok {
			return RouteCard, a, ""
		}
	case len(seg) == 4 && seg[3] == "invoke" && method == http.MethodPost:
		if a, ok := id(seg[2]); ok {
			return RouteInvoke, a, ""
		}
	case len(seg) == 6 && seg[3] == "tasks" && seg[5] == "get" && method == http.MethodPost:
		a, ok1 := id(seg[2])
		t, ok2 := id(seg[4])
		if ok1 && ok2 {
			return RouteTask, a, t
		}
	}
	return RouteUnknown, "", ""
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

func (r *Registry) serveList(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	f := r.listFault
	r.listHits++
	hit := r.listHits
	type summary struct {
		AgentID         string `json:"agent_id"`
		Name            string `json:"name"`
		Description     string `json:"description"`
		RequiresPayment bool   `json:"requires_payment"`
		RequiresOAuth   bool   `json:"requires_oauth"`
	}
	list := struct {
		Agents []summary `json:"agents"`
	}{Agents: []summary{}}
	for _, id := range r.order {
		a := r.agents[id]
		list.Agents = append(list.Agents, summary{AgentID: a.ID, Name: a.name(), Description: a.Description,
			RequiresPayment: a.paid(), RequiresOAuth: len(a.SecuritySchemes) > 0})
	}
	r.mu.Unlock()
	if f.apply(w, req, hit) {
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// agent returns agentID's state and counts a hit of route; nil when unknown.
func (r *Registry) agent(agentID string, route Route) (*agentState, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[agentID]
	if !ok {
		return nil, 0
	}
	a.hits[route]++
	return a, a.hits[route]
}

func (r *Registry) serveCard(w http.ResponseWriter, req *http.Request, agentID string) {
	a, hit := r.agent(agentID, RouteCard)
	if a == nil {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
		return
	}
	r.mu.Lock()
	f, card := a.CardFault, a.card()
	r.mu.Unlock()
	if f.apply(w, req, hit) {
		return
	}
	writeJSON(w, http.StatusOK, card)
}

func (r *Registry) serveInvoke(w http.ResponseWriter, req *http.Request, agentID string, body []byte) {
	a, hit := r.agent(agentID, RouteInvoke)
	if a == nil {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
		return
	}
	r.mu.Lock()
	f, price, async, result := a.InvokeFault, a.Price, a.Async, a.Result
	r.mu.Unlock()
	if f.apply(w, req, hit) {
		return
	}
	var in Invocation
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Message == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("the invoke body must be {message, input, auth_token} with a message"))
		return
	}
	if price != nil && !r.pay(w, req, price) {
		return
	}
	if async == nil {
		if len(result) == 0 {
			result = json.RawMessage(`{"answer":"42"}`)
		}
		writeJSON(w, http.StatusOK, struct {
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		}{"completed", result})
		return
	}
	r.mu.Lock()
	r.seq++
	t := &task{async: *async}
	if t.async.TaskID == "" {
		t.async.TaskID = "task-" + strconv.Itoa(r.seq)
	}
	if t.async.ReceiptID == "" {
		t.async.ReceiptID = "rcpt-" + strconv.Itoa(r.seq)
	}
	r.tasks[taskKey{agentID, t.async.TaskID}] = t
	r.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"status": "accepted", "receipt_id": t.async.ReceiptID, "task_id": t.async.TaskID})
}

func (r *Registry) serveTask(w http.ResponseWriter, req *http.Request, agentID, taskID string, body []byte) {
	a, hit := r.agent(agentID, RouteTask)
	if a == nil {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
		return
	}
	r.mu.Lock()
	f := a.TaskFault
	r.mu.Unlock()
	if f.apply(w, req, hit) {
		return
	}
	var empty map[string]json.RawMessage
	if json.Unmarshal(body, &empty) != nil || empty == nil {
		writeJSON(w, http.StatusBadRequest, errorBody("the get-task body must be a JSON object"))
		return
	}
	r.mu.Lock()
	t, ok := r.tasks[taskKey{agentID, taskID}]
	var answer map[string]any
	if ok {
		t.polls++
		switch {
		case t.polls <= t.async.RunningPolls:
			answer = map[string]any{"task_id": taskID, "status": "running"}
		case t.async.Error != "":
			answer = map[string]any{"task_id": taskID, "status": "failed", "error": t.async.Error}
		default:
			res := t.async.Result
			if len(res) == 0 {
				res = json.RawMessage(`{"answer":"42"}`)
			}
			answer = map[string]any{"task_id": taskID, "status": "completed", "result": res}
		}
	}
	r.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody("unknown task"))
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

func errorBody(msg string) map[string]string { return map[string]string{"error": msg} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
