package http

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/witness"
)

// The node as a witness (docs/transparency.md, Witnessing): C2SP tlog-witness
// under the prefix /v1/witness. The add-checkpoint answers are C2SP's, plain
// text and not the API's JSON errors, so that any tlog-witness client (a
// third-party log's) reads them: a cosignature line on 200, the size the
// witness holds as text/x.tlog.size on 409, a message on any other refusal.

// Each client address may ask for witnessRate cosignatures a second,
// witnessBurst at once: a log submits about once a second, and each
// cosignature costs the witness an fsync.
const (
	witnessRate  = 5
	witnessBurst = 20
)

func (s *Server) witnessRoutes() {
	// No bearer token: the log's signature authenticates the request; the
	// per-address connection caps and witnessLimits bound what one client
	// may ask.
	s.witnessLimits = newKeyedLimiters(witnessRate, witnessBurst, maxLimiterKeys)
	s.handle(http.MethodPost, "/v1/witness/add-checkpoint", s.handleAddCheckpoint, routePublic)
	s.handle(http.MethodGet, "/v1/witness", s.handleWitness, routeObserver|routeNoAgent)
}

// handleAddCheckpoint answers POST /v1/witness/add-checkpoint.
func (s *Server) handleAddCheckpoint(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.witness == nil {
		writeText(w, http.StatusNotFound, "text/plain; charset=utf-8", "this node witnesses no log\n")
		return nil
	}
	if wait, _ := s.witnessLimits.take(clientAddress(s.clientAddr(r))); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(wait.Seconds()+0.999))))
		writeText(w, http.StatusTooManyRequests, "text/plain; charset=utf-8", "too many add-checkpoint requests from this address; retry later\n")
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, witness.MaxRequestBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeText(w, http.StatusRequestEntityTooLarge, "text/plain; charset=utf-8", "the request body is larger than "+strconv.Itoa(witness.MaxRequestBytes)+" bytes\n")
		return nil
	}
	if err != nil {
		return err
	}
	cosigned, err := s.witness.AddCheckpoint(body)
	var refused *witness.RequestError
	if errors.As(err, &refused) {
		if refused.Status == http.StatusConflict {
			writeText(w, http.StatusConflict, "text/x.tlog.size", strconv.FormatInt(refused.Size, 10)+"\n")
		} else {
			// A refusal may repeat what the client sent (an origin line,
			// a size): bounded as every other error text is.
			writeText(w, refused.Status, "text/plain; charset=utf-8", commands.CapText(refused.Msg)+"\n")
		}
		return nil
	}
	if err != nil {
		return err
	}
	// The state is durable already; the audit entry records the cosignature
	// given, under the log's origin as the actor. A cosignature of the tree
	// the witness held already records nothing: anyone may replay a public
	// checkpoint, and the entry it first made says all there is.
	if !cosigned.Again {
		if _, err := s.log.Audit(context.WithoutCancel(r.Context()), "witness.cosigned", cosigned.Origin, map[string]any{
			"origin": cosigned.Origin, "tree_size": cosigned.TreeSize,
		}); err != nil {
			return err
		}
	}
	s.metrics.observeCosignature()
	writeText(w, http.StatusOK, "text/plain; charset=utf-8", cosigned.Line)
	return nil
}

func writeText(w http.ResponseWriter, status int, contentType, body string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

type witnessResponse struct {
	Name        string           `json:"name"`
	VerifierKey string           `json:"verifier_key"`
	Logs        []witnessedLogJS `json:"logs"`
}

type witnessedLogJS struct {
	Origin      string  `json:"origin"`
	VerifierKey string  `json:"verifier_key"`
	TreeSize    int64   `json:"tree_size"`
	RootHash    *string `json:"root_hash"`
	CosignedAt  *string `json:"cosigned_at"`
}

// handleWitness answers GET /v1/witness: the witness key and what it holds
// for each log it witnesses.
func (s *Server) handleWitness(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.witness == nil {
		return &Error{Status: http.StatusNotFound, Code: codeNotFound, Message: "this node runs no witness"}
	}
	resp := witnessResponse{Name: s.witness.Name(), VerifierKey: s.witness.VerifierKey(), Logs: []witnessedLogJS{}}
	for _, l := range s.witness.Logs() {
		js := witnessedLogJS{Origin: l.Origin, VerifierKey: l.VerifierKey}
		if l.State != nil {
			js.TreeSize, js.RootHash, js.CosignedAt = l.State.TreeSize, &l.State.RootHash, &l.State.CosignedAt
		}
		resp.Logs = append(resp.Logs, js)
	}
	return writeJSON(w, resp)
}
