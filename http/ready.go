package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Why the node is not ready, in the reason of GET /v1/ready.
const (
	// notReadyLogFailed: the log has failed (fail-stop); the node takes no
	// writes until it is restarted, and GET /v1/health answers 503 too.
	notReadyLogFailed = "log_failed"
	// notReadyStopping: the node is shutting down; it finishes the requests
	// it has and takes new ones only until the listener closes.
	notReadyStopping = "shutting_down"
	// notReadyBehind: the fork guard holds the node's writes
	// (eventlog.Behind): it has seen a checkpoint of its own key that its
	// chain does not cover, or, recovered, waits for its witnesses.
	notReadyBehind = "behind_published"
)

// readyResponse is the readiness answer.
type readyResponse struct {
	Ready bool `json:"ready"`
	// Reason is set when Ready is false.
	Reason string `json:"reason,omitempty"`
}

// handleReady answers GET /v1/ready: whether the node should be sent
// traffic. Health says whether the process is alive and its log can record;
// readiness also turns false as soon as a shutdown begins, so that a load
// balancer stops sending requests before the listener closes. While the node
// opens its store, verifies its newest events and folds the chain into its
// read models it does not listen at all, so a probe then fails to connect,
// which every orchestrator reads as not ready. Like health it needs no token
// and says nothing but a reason code.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reason := ""
	switch {
	case s.log.Healthy() != nil:
		reason = notReadyLogFailed
	case s.stopping.Load():
		reason = notReadyStopping
	case s.mirrorStopped():
		reason = notReadyMirrorStopped
	case s.log.Held() != nil:
		reason = notReadyBehind
	}
	if reason == "" {
		return writeJSON(w, readyResponse{Ready: true})
	}
	b, err := marshalJSON(readyResponse{Reason: reason})
	if err != nil {
		return err
	}
	writeBody(w, http.StatusServiceUnavailable, b)
	return nil
}
