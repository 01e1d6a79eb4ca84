package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// healthResponse is the liveness answer: one string field (docs/api.md).
type healthResponse struct {
	Status string `json:"status"`
}

// handleHealth answers GET /v1/health. It needs no token, so it says nothing but
// whether the node can still record events: once the log has failed (fail-stop),
// because a write did not become durable or because a read met a damaged block
// of the store, the node is unhealthy until restarted. The 503 body keeps the
// same one-field shape rather than the error shape, because probes read status,
// not code; the cause is in the node's log.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := s.log.Healthy(); err != nil {
		b, mErr := marshalJSON(healthResponse{Status: "unavailable"})
		if mErr != nil {
			return mErr
		}
		writeBody(w, http.StatusServiceUnavailable, b)
		return nil
	}
	return writeJSON(w, healthResponse{Status: "ok"})
}
