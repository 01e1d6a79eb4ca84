package http

import (
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
)

// handleGetProfile answers GET /v1/civilization/profile?agent_did= or ?public_id=.
func (s *Server) handleGetProfile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	rec, err := s.identityFromQuery(r.URL.Query())
	if err != nil {
		return err
	}
	p, ok, err := s.identities.Profile(rec.AgentDID)
	if err != nil {
		return err
	}
	if !ok {
		return errNotInReadModel("profile", rec.AgentDID)
	}
	return writeJSON(w, p)
}

// handlePostProfile replaces an agent's profile and answers with it.
func (s *Server) handlePostProfile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in commands.ProfileInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	if _, err := s.identity.UpdateProfile(r.Context(), requestActor(r.Context()), in); err != nil {
		return err
	}
	p, ok, err := s.identities.Profile(in.AgentDID)
	if err != nil {
		return err
	}
	if !ok {
		return errNotInReadModel("profile", in.AgentDID)
	}
	return writeJSON(w, p)
}

// errNotInReadModel is a write that succeeded but cannot be read back: the read
// model does not fold the event, a wiring fault (500).
func errNotInReadModel(what, agentDID string) error {
	return fmt.Errorf("%s of %s: appended but not in the read model", what, agentDID)
}
