package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// handleMetrics answers GET /v1/civilization/metrics with the aggregates of the
// identity read model (projections.Metrics).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return writeJSON(w, s.identities.Metrics())
}
