package registrydev

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// Options configures New.
type Options struct {
	// BaseURL is the URL the server is reached at, without a trailing slash;
	// the OAuth agent's card names its endpoints under it.
	BaseURL string
	// Now is the clock of signatures, payments and tokens; default time.Now.
	Now func() time.Time
	// Logger, when set, gets one line per request.
	Logger *slog.Logger
}

// maxClockSkew bounds how far X-Node-Timestamp may be from now.
const maxClockSkew = 5 * time.Minute

// maxBody bounds a request body.
const maxBody = 1 << 20

// Server is a running stand-in registry, an http.Handler. Its methods are
// safe for concurrent use.
type Server struct {
	opts     Options
	agents   []agent
	payments *Facilitator
	oauth    *authServer

	mu    sync.Mutex
	seq   int
	tasks map[string]*task // agent_id "/" task_id
}

type task struct {
	receiptID string
	polls     int
	result    json.RawMessage
}

// New returns a stand-in registry with its four agents.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	return &Server{opts: opts, agents: agents(opts.BaseURL), payments: NewFacilitator(opts.Now),
		oauth: newAuthServer(opts.Now), tasks: map[string]*task{}}
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	start := s.opts.Now()
	s.serve(rec, req)
	s.opts.Logger.Info("request", "method", req.Method, "path", req.URL.EscapedPath(), "status", rec.status,
		"node", req.Header.Get("X-Node-DID"), "took", s.opts.Now().Sub(start).Round(time.Microsecond))
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	path := req.URL.EscapedPath()
	switch {
	case path == "/oauth/authorize" && req.Method == http.MethodGet:
		s.oauth.authorize(w, req)
		return
	case path == "/oauth/token" && req.Method == http.MethodPost:
		s.oauth.token(w, req)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		writeJSON(w, http.StatusBadRequest, errorBody("the body could not be read, or is over 1 MiB"))
		return
	}
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(seg) < 2 || seg[0] != "v1" || seg[1] != "agents" {
		writeJSON(w, http.StatusNotFound, errorBody("no such endpoint"))
		return
	}
	if msg := s.checkNode(req, body); msg != "" {
		writeJSON(w, http.StatusUnauthorized, errorBody(msg))
		return
	}
	id := func(i int) string {
		v, err := url.PathUnescape(seg[i])
		if err != nil {
			return ""
		}
		return v
	}
	switch {
	case len(seg) == 2 && req.Method == http.MethodGet:
		s.list(w)
	case len(seg) == 3 && req.Method == http.MethodGet:
		if a := s.agent(id(2)); a != nil {
			writeJSON(w, http.StatusOK, a.card())
			return
		}
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
	case len(seg) == 4 && seg[3] == "invoke" && req.Method == http.MethodPost:
		s.invoke(w, req, id(2), body)
	case len(seg) == 6 && seg[3] == "tasks" && seg[5] == "get" && req.Method == http.MethodPost:
		s.task(w, id(2), id(4), body)
	default:
		writeJSON(w, http.StatusNotFound, errorBody("no such endpoint"))
	}
}

// checkNode verifies the node's signature of the request; it returns why it
// does not verify, or "".
func (s *Server) checkNode(req *http.Request, body []byte) string {
	did, ts := req.Header.Get("X-Node-DID"), req.Header.Get("X-Node-Timestamp")
	pub, err := eventlog.PublicKeyFromDID(did)
	if err != nil {
		return "X-Node-DID must be the node's did:key"
	}
	at, err := time.Parse("2006-01-02T15:04:05Z", ts)
	if err != nil {
		return "X-Node-Timestamp must be RFC 3339 UTC with seconds"
	}
	if d := s.opts.Now().Sub(at); d > maxClockSkew || d < -maxClockSkew {
		return "X-Node-Timestamp is more than 5 minutes from the registry's clock"
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(req.Header.Get("X-Node-Signature"))
	if err != nil || !ed25519.Verify(pub, servicenet.SigningBytes(req.Method, req.URL.EscapedPath(), ts, body), sig) {
		return "X-Node-Signature does not verify with the key of X-Node-DID"
	}
	return ""
}

func (s *Server) agent(id string) *agent {
	for i := range s.agents {
		if s.agents[i].id == id {
			return &s.agents[i]
		}
	}
	return nil
}

func (s *Server) list(w http.ResponseWriter) {
	type summary struct {
		AgentID         string `json:"agent_id"`
		Name            string `json:"name"`
		Description     string `json:"description"`
		RequiresPayment bool   `json:"requires_payment"`
		RequiresOAuth   bool   `json:"requires_oauth"`
	}
	out := struct {
		Agents []summary `json:"agents"`
	}{}
	for _, a := range s.agents {
		out.Agents = append(out.Agents, summary{AgentID: a.id, Name: a.name, Description: a.description,
			RequiresPayment: a.price != nil, RequiresOAuth: a.oauth})
	}
	writeJSON(w, http.StatusOK, out)
}

// invocation is an invoke body as the registry reads it.
type invocation struct {
	Message   string          `json:"message"`
	Input     json.RawMessage `json:"input"`
	AuthToken string          `json:"auth_token"`
}

func (s *Server) invoke(w http.ResponseWriter, req *http.Request, agentID string, body []byte) {
	a := s.agent(agentID)
	if a == nil {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
		return
	}
	var in invocation
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Message == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("the invoke body must be {message, input, auth_token} with a message"))
		return
	}
	if a.oauth && !s.oauth.valid(in.AuthToken) {
		writeJSON(w, http.StatusBadRequest, errorBody("auth_token is not an access token this registry issued, or it has expired: obtain one at /oauth/token"))
		return
	}
	result, err := a.answer(in, s.opts.Now())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	if a.price != nil && !s.pay(w, req, *a.price) {
		return
	}
	if !a.async {
		writeJSON(w, http.StatusOK, map[string]any{"status": "completed", "result": result})
		return
	}
	s.mu.Lock()
	s.seq++
	n := strconv.Itoa(s.seq)
	t := &task{receiptID: "rcpt-" + n, result: result}
	taskID := "task-" + n
	s.tasks[agentID+"/"+taskID] = t
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"status": "accepted", "receipt_id": t.receiptID, "task_id": taskID})
}

// pay checks the invoke's payment against p. It reports true when the
// payment verified, with the receipt header set; otherwise it has answered
// 402.
func (s *Server) pay(w http.ResponseWriter, req *http.Request, p Price) bool {
	name, other := p.PaymentHeader()
	value := req.Header.Get(name)
	if value == "" {
		reason := name + " header is required"
		if req.Header.Get(other) != "" {
			reason = "payment sent in " + other + ", this agent speaks x402 v" + strconv.Itoa(p.Version)
		}
		p.PaymentRequired(w, req, reason)
		return false
	}
	settled, err := s.payments.Verify(p, value)
	if err != nil {
		p.PaymentRequired(w, req, err.Error())
		return false
	}
	s.opts.Logger.Info("payment settled", "payer", settled.Payer, "pay_to", settled.PayTo, "value", settled.Value,
		"network", settled.Network, "transaction", settled.Transaction)
	p.SetReceipt(w, settled)
	return true
}

func (s *Server) task(w http.ResponseWriter, agentID, taskID string, body []byte) {
	if s.agent(agentID) == nil {
		writeJSON(w, http.StatusNotFound, errorBody("unknown agent"))
		return
	}
	var empty map[string]json.RawMessage
	if json.Unmarshal(body, &empty) != nil || empty == nil {
		writeJSON(w, http.StatusBadRequest, errorBody("the get-task body must be a JSON object"))
		return
	}
	s.mu.Lock()
	t, ok := s.tasks[agentID+"/"+taskID]
	var answer map[string]any
	if ok {
		t.polls++
		if t.polls == 1 {
			answer = map[string]any{"task_id": taskID, "status": "running"}
		} else {
			answer = map[string]any{"task_id": taskID, "status": "completed", "result": t.result}
		}
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody("unknown task"))
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

func errorBody(msg string) map[string]string { return map[string]string{"error": msg} }

// statusWriter keeps the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}
