package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/projections"
)

// metricsResponse is the identity aggregates (projections.Metrics) and, on a node
// with missions, the mission aggregates under "missions".
type metricsResponse struct {
	projections.Metrics
	Missions *projections.MissionMetrics `json:"missions,omitempty"`
}

// handleMetrics answers GET /v1/civilization/metrics with the aggregates of the
// identity and missions read models.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ids, err := s.identities.Metrics()
	if err != nil {
		return err
	}
	resp := metricsResponse{Metrics: ids}
	if s.missions != nil {
		m, err := s.missions.Metrics()
		if err != nil {
			return err
		}
		resp.Missions = &m
	}
	return writeJSON(w, resp)
}
