package registrydev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The registry's agent routes, served over a set of agents. Server puts the
// stand-in's node check, OAuth and request log in front of them; the test
// fake servicenettest puts its recording and faults in front of the same
// routes, so that the node is tested against the registry civnode
// registry-dev runs.

// Route names one of the registry's four agent endpoints.
type Route string

// The registry's routes (docs/servicenet.md). RouteUnknown is any other
// request, answered 404.
const (
	RouteList    Route = "list"
	RouteCard    Route = "card"
	RouteInvoke  Route = "invoke"
	RouteTask    Route = "task"
	RouteUnknown Route = "unknown"
)

// ParsePath routes a request by its method and escaped path. The ids are
// unescaped; one that does not unescape is "", which no agent or task has.
func ParsePath(method, path string) (route Route, agentID, taskID string) {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(seg) < 2 || seg[0] != "v1" || seg[1] != "agents" {
		return RouteUnknown, "", ""
	}
	id := func(i int) string {
		v, err := url.PathUnescape(seg[i])
		if err != nil {
			return ""
		}
		return v
	}
	switch {
	case len(seg) == 2 && method == http.MethodGet:
		return RouteList, "", ""
	case len(seg) == 3 && method == http.MethodGet:
		return RouteCard, id(2), ""
	case len(seg) == 4 && seg[3] == "invoke" && method == http.MethodPost:
		return RouteInvoke, id(2), ""
	case len(seg) == 6 && seg[3] == "tasks" && seg[5] == "get" && method == http.MethodPost:
		return RouteTask, id(2), id(4)
	}
	return RouteUnknown, "", ""
}

// Agent is one agent of a Registry: its card and how it answers an invoke.
type Agent struct {
	ID string
	// Name defaults to ID.
	Name, Description string
	// InputSchema, SecuritySchemes and Pricing are the card's members as
	// sent; nil leaves them out. An agent with SecuritySchemes is listed as
	// requiring OAuth. A paid agent (Price set) without Pricing gets
	// {currency, rail, network, asset, amount} from its Price.
	InputSchema, SecuritySchemes, Pricing json.RawMessage
	// RequiresPayment is the card's requires_payment; nil sends true for an
	// agent with a Price and leaves the member out otherwise.
	RequiresPayment *bool
	// Price, when set, makes invoke answer 402 until it is paid.
	Price *Price
	// OAuth makes invoke refuse an auth_token that Options.Authorized does
	// not accept.
	OAuth bool
	// Async, when set, makes invoke answer "accepted" with a new task.
	Async *Async
	// Answer is the result of an invoke, computed before the payment is
	// asked for; an error is answered 400 with its text.
	Answer func(in Invocation, now time.Time) (json.RawMessage, error)
}

// Async is an agent that accepts a task: the task answers "running" to its
// first RunningPolls fetches, then "completed" with Result (by default the
// invoke's Answer), or "failed" with Error when Error is set.
type Async struct {
	// ReceiptID and TaskID default to rcpt-N and task-N, N counting the
	// registry's accepted invokes.
	ReceiptID, TaskID string
	RunningPolls      int
	Result            json.RawMessage
	Error             string
}

// Invocation is an invoke body as the registry reads it.
type Invocation struct {
	Message   string          `json:"message"`
	Input     json.RawMessage `json:"input"`
	AuthToken string          `json:"auth_token"`
}

// Directory is the agents a Registry serves. Its methods are called while
// requests are served, so a directory that changes must guard itself.
type Directory interface {
	// Agents returns the agents in the order GET /v1/agents lists them.
	Agents() []Agent
	// Agent returns the agent with id.
	Agent(id string) (Agent, bool)
}

// RegistryOptions configures NewRegistry.
type RegistryOptions struct {
	// Now is the clock of answers and payments; default time.Now.
	Now func() time.Time
	// Payments verifies payments; default a new Facilitator on Now.
	Payments *Facilitator
	// Authorized reports whether an invoke's auth_token is good for an
	// agent with OAuth set; nil accepts none.
	Authorized func(token string) bool
	// Settle, when set, is told of each payment that verified; an error
	// refuses the payment with its text, as a facilitator that cannot
	// settle would.
	Settle func(agentID string, s Settlement) error
	// Refused, when set, is told why a payment sent was refused.
	Refused func(reason string)
}

// Registry serves the list, card, invoke and task routes over a Directory.
// Its methods are safe for concurrent use.
type Registry struct {
	dir  Directory
	opts RegistryOptions
	// resultFirst sends a completed invoke as {"result","status"}, the
	// order civnode registry-dev has always sent; the test fake sends
	// {"status","result"}.
	resultFirst bool

	mu    sync.Mutex
	seq   int
	tasks map[taskKey]*task
}

type taskKey struct{ agentID, taskID string }

type task struct {
	async Async
	polls int
}

// NewRegistry returns a Registry serving the agents of dir.
func NewRegistry(dir Directory, opts RegistryOptions) *Registry {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Payments == nil {
		opts.Payments = NewFacilitator(opts.Now)
	}
	return &Registry{dir: dir, opts: opts, tasks: map[taskKey]*task{}}
}

// Serve answers a request of route, as ParsePath routed it, with its body
// already read. A caller checks the node's credential first.
func (r *Registry) Serve(w http.ResponseWriter, req *http.Request, route Route, agentID, taskID string, body []byte) {
	switch route {
	case RouteList:
		r.list(w)
	case RouteCard:
		if a, ok := r.dir.Agent(agentID); ok {
			writeJSON(w, http.StatusOK, a.card())
			return
		}
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
	case RouteInvoke:
		r.invoke(w, req, agentID, body)
	case RouteTask:
		r.task(w, agentID, taskID, body)
	default:
		writeJSON(w, http.StatusNotFound, errorBody("no such endpoint"))
	}
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

func (r *Registry) list(w http.ResponseWriter) {
	type summary struct {
		AgentID         string `json:"agent_id"`
		Name            string `json:"name"`
		Description     string `json:"description"`
		RequiresPayment bool   `json:"requires_payment"`
		RequiresOAuth   bool   `json:"requires_oauth"`
	}
	out := struct {
		Agents []summary `json:"agents"`
	}{Agents: []summary{}}
	for _, a := range r.dir.Agents() {
		out.Agents = append(out.Agents, summary{AgentID: a.ID, Name: a.name(), Description: a.Description,
			RequiresPayment: a.paid(), RequiresOAuth: len(a.SecuritySchemes) > 0})
	}
	writeJSON(w, http.StatusOK, out)
}

func (r *Registry) invoke(w http.ResponseWriter, req *http.Request, agentID string, body []byte) {
	a, ok := r.dir.Agent(agentID)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
		return
	}
	var in Invocation
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Message == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("the invoke body must be {message, input, auth_token} with a message"))
		return
	}
	if a.OAuth && (r.opts.Authorized == nil || !r.opts.Authorized(in.AuthToken)) {
		writeJSON(w, http.StatusBadRequest, errorBody("auth_token is not an access token this registry issued, or it has expired: obtain one at /oauth/token"))
		return
	}
	var result json.RawMessage
	if a.Answer != nil {
		var err error
		if result, err = a.Answer(in, r.opts.Now()); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
			return
		}
	}
	if a.Price != nil && !r.pay(w, req, a.ID, *a.Price) {
		return
	}
	if a.Async == nil {
		if r.resultFirst {
			writeJSON(w, http.StatusOK, map[string]any{"status": "completed", "result": result})
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		}{"completed", result})
		return
	}
	r.mu.Lock()
	r.seq++
	t := &task{async: *a.Async}
	if len(t.async.Result) == 0 {
		t.async.Result = result
	}
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

// pay checks the invoke's payment against p. It reports true when the
// payment verified and settled, with the receipt header set; otherwise it
// has answered 402.
func (r *Registry) pay(w http.ResponseWriter, req *http.Request, agentID string, p Price) bool {
	p = p.WithDefaults()
	name, other := p.PaymentHeader()
	value := req.Header.Get(name)
	if value == "" {
		reason := name + " header is required"
		if req.Header.Get(other) != "" {
			reason = "payment sent in " + other + ", this agent speaks x402 v" + strconv.Itoa(p.Version)
			r.refused(reason)
		}
		p.PaymentRequired(w, req, reason)
		return false
	}
	s, err := r.opts.Payments.Verify(p, value)
	if err == nil && r.opts.Settle != nil {
		err = r.opts.Settle(agentID, s)
	}
	if err != nil {
		r.refused(err.Error())
		p.PaymentRequired(w, req, err.Error())
		return false
	}
	p.SetReceipt(w, s)
	return true
}

func (r *Registry) refused(reason string) {
	if r.opts.Refused != nil {
		r.opts.Refused(reason)
	}
}

func (r *Registry) task(w http.ResponseWriter, agentID, taskID string, body []byte) {
	if _, ok := r.dir.Agent(agentID); !ok {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
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
			answer = map[string]any{"task_id": taskID, "status": "completed", "result": t.async.Result}
		}
	}
	r.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody("unknown task"))
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

func (a *Agent) name() string {
	if a.Name == "" {
		return a.ID
	}
	return a.Name
}

// paid is the list's requires_payment.
func (a *Agent) paid() bool {
	if a.RequiresPayment != nil {
		return *a.RequiresPayment
	}
	return a.Price != nil
}

// cardJSON is the card as the registry sends it.
type cardJSON struct {
	AgentID         string          `json:"agent_id"`
	Name            string          `json:"name"`
	Description     string          `json:"description"`
	InputSchema     json.RawMessage `json:"input_schema,omitempty"`
	SecuritySchemes json.RawMessage `json:"security_schemes,omitempty"`
	Pricing         json.RawMessage `json:"pricing,omitempty"`
	RequiresPayment *bool           `json:"requires_payment,omitempty"`
}

func (a *Agent) card() cardJSON {
	c := cardJSON{AgentID: a.ID, Name: a.name(), Description: a.Description, InputSchema: a.InputSchema,
		SecuritySchemes: a.SecuritySchemes, Pricing: a.Pricing, RequiresPayment: a.RequiresPayment}
	if a.Price != nil {
		if c.Pricing == nil {
			c.Pricing, _ = json.Marshal(a.Price.Pricing())
		}
		if c.RequiresPayment == nil {
			yes := true
			c.RequiresPayment = &yes
		}
	}
	return c
}

func errorBody(msg string) map[string]string { return map[string]string{"error": msg} }
