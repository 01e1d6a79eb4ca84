package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
)

// handleGetControllerBinding answers GET /v1/civilization/controller-binding with
// the binding of ?agent_did= or ?public_id=; an identity without one is 404
// controller_binding_not_found.
func (s *Server) handleGetControllerBinding(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	rec, err := s.identityFromQuery(r.URL.Query())
	if err != nil {
		return err
	}
	b, _, ok, err := s.identities.Binding(rec.AgentDID)
	if err != nil {
		return err
	}
	if !ok {
		return commands.NotFound("controller_binding_not_found", "", "%s has no controller binding", rec.PublicID)
	}
	return writeJSON(w, b)
}

// handlePostControllerBinding replaces an agent's binding and answers with it.
func (s *Server) handlePostControllerBinding(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in commands.ControllerBindingInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	if _, err := s.identity.UpdateControllerBinding(r.Context(), requestActor(r.Context()), in); err != nil {
		return err
	}
	b, _, ok, err := s.identities.Binding(in.AgentDID)
	if err != nil {
		return err
	}
	if !ok {
		return errNotInReadModel("controller binding", in.AgentDID)
	}
	return writeJSON(w, b)
}
