package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
)

// The agent registry proxy (docs/servicenet.md). The
// handlers decode and answer; commands.Servicenet decides, talks to the
// registry and records. The routes wait on the registry, so they run under
// registryHandlerTimeout rather than the handler timeout (routeRegistry).

// servicenetRoutes registers the proxy's endpoints when the node has a
// registry configured.
func (s *Server) servicenetRoutes() {
	if s.servicenet == nil {
		return
	}
	s.handle(http.MethodGet, "/v1/core/servicenet/agents", s.handleListAgents, routeRegistry)
	s.handle(http.MethodGet, "/v1/core/servicenet/agents/:agent_id", s.handleGetAgent, routeRegistry)
	s.handle(http.MethodPost, "/v1/core/servicenet/agents/:agent_id/invoke", s.handleInvokeAgent, routeRegistry)
	s.handle(http.MethodPost, "/v1/core/servicenet/agents/:agent_id/tasks/:task_id/get", s.handleGetTask, routeRegistry)
}

type agentListResponse struct {
	Agents []servicenet.Summary `json:"agents"`
}

// handleListAgents answers GET /v1/core/servicenet/agents.
func (s *Server) handleListAgents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	agents, err := s.servicenet.Agents(r.Context(), requestActor(r.Context()))
	if err != nil {
		return err
	}
	if agents == nil {
		agents = []servicenet.Summary{}
	}
	return writeJSON(w, agentListResponse{Agents: agents})
}

// handleGetAgent answers GET /v1/core/servicenet/agents/{agent_id} with the
// agent's card.
func (s *Server) handleGetAgent(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	card, err := s.servicenet.Card(r.Context(), requestActor(r.Context()), ps.ByName("agent_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, card)
}

// handleInvokeAgent answers POST /v1/core/servicenet/agents/{agent_id}/invoke.
func (s *Server) handleInvokeAgent(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	var in commands.InvokeInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := s.servicenet.Invoke(r.Context(), requestActor(r.Context()), ps.ByName("agent_id"), in)
	if err != nil {
		return err
	}
	return writeJSON(w, res.Body())
}

// handleGetTask answers POST /v1/core/servicenet/agents/{agent_id}/tasks/{task_id}/get {}.
func (s *Server) handleGetTask(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := s.decodeJSON(w, r, &emptyRequest{}); err != nil {
		return err
	}
	t, err := s.servicenet.Task(r.Context(), requestActor(r.Context()), ps.ByName("agent_id"), ps.ByName("task_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, t)
}
