package http

import (
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

// auditResponse is GET /v1/audit (wire.md §5).
type auditResponse struct {
	Entries []eventlog.AuditEntry `json:"entries"`
}

// handleAudit answers GET /v1/audit?since=&action=&limit= with the matching
// entries, oldest first. action matches like the events' type filter.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	since, err := querySince(q)
	if err != nil {
		return err
	}
	action, err := queryFilter(q, "action")
	if err != nil {
		return err
	}
	entries, err := s.log.AuditEntries(eventlog.AuditQuery{Since: since, Action: action, Limit: limit})
	if err != nil {
		return fmt.Errorf("query audit entries: %w", err)
	}
	if entries == nil {
		entries = []eventlog.AuditEntry{} // [] rather than null
	}
	return writeJSON(w, auditResponse{Entries: entries})
}
