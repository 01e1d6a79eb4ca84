package http

import (
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

// auditResponse is GET /v1/audit (docs/api.md).
type auditResponse struct {
	Entries []eventlog.AuditEntry `json:"entries"`
}

// handleAudit answers GET /v1/audit?since=&action=&limit= with the matching
// entries, oldest first. action matches like the events' type filter. Like the
// events, a page ends at the byte budget; page on with since= the last entry's
// timestamp.
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
	entries, cut, err := s.log.AuditPage(r.Context(), eventlog.AuditQuery{Since: since, Action: action, Limit: limit, Bytes: s.pageBytes})
	if err != nil {
		return fmt.Errorf("query audit entries: %w", err)
	}
	if cut {
		w.Header().Set(PageTruncatedHeader, "true")
	}
	return writeJSON(w, auditResponse{Entries: entries})
}
