package registrydev

import (
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
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
	opts  Options
	reg   *Registry
	oauth *authServer
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
	s := &Server{opts: opts, oauth: newAuthServer(opts.Now)}
	s.reg = NewRegistry(fixed(agents(opts.BaseURL)), RegistryOptions{Now: opts.Now, Authorized: s.oauth.valid,
		Settle: func(_ string, settled Settlement) error {
			opts.Logger.Info("payment settled", logkey.Payer, settled.Payer, logkey.PayTo, settled.PayTo, logkey.Value, settled.Value,
				logkey.Network, settled.Network, logkey.Transaction, settled.Transaction)
			return nil
		}})
	s.reg.resultFirst = true
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	start := s.opts.Now()
	s.serve(rec, req)
	s.opts.Logger.Info("request", logkey.Method, req.Method, logkey.Path, req.URL.EscapedPath(), logkey.Status, rec.status,
		logkey.Node, req.Header.Get("X-Node-DID"), logkey.Took, s.opts.Now().Sub(start).Round(time.Microsecond))
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
	route, agentID, taskID := ParsePath(req.Method, path)
	s.reg.Serve(w, req, route, agentID, taskID, body)
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

// fixed is a Directory of agents that never change.
type fixed []Agent

func (d fixed) Agents() []Agent { return d }

func (d fixed) Agent(id string) (Agent, bool) {
	for _, a := range d {
		if a.ID == id {
			return a, true
		}
	}
	return Agent{}, false
}

// statusWriter keeps the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}
