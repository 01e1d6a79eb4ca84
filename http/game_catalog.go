package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// handleGameCatalog answers GET /v1/game/catalog with the catalog the node runs
// with, in the catalog file format itself (package catalog), so an operator can
// save the answer as the starting point of their own --catalog file. Owner and
// agent tokens may read it: agents choose their role and faction from it.
func (s *Server) handleGameCatalog(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	return writeJSON(w, s.catalog)
}
