package http

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

// handleEvents answers GET /v1/events?since=&limit=&type= with
// {"events":[…],"total":N}, oldest first; total counts every match before limit.
// Paging with since=<timestamp of the last event seen> visits each event once,
// because timestamps strictly increase along the chain.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	since, err := querySince(q)
	if err != nil {
		return err
	}
	typ, err := queryFilter(q, "type")
	if err != nil {
		return err
	}
	events, total, err := s.log.Query(eventlog.Query{Since: since, Type: typ, Limit: limit})
	if err != nil {
		return fmt.Errorf("query events: %w", err)
	}
	body, err := eventsBody(events, total)
	if err != nil {
		return err
	}
	writeBody(w, http.StatusOK, body)
	return nil
}

// eventsBody frames the events' stored bytes by hand. Passing them through
// encoding/json would re-encode them (it escapes <, > and &, which RFC 8785 does
// not), and a client verifying signatures needs the bytes that were signed.
func eventsBody(events []eventlog.Event, total uint64) ([]byte, error) {
	size := 32
	for i := range events {
		size += len(events[i].Raw()) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"events":[`)
	for i := range events {
		raw := events[i].Raw()
		if len(raw) == 0 {
			return nil, fmt.Errorf("event %d has no stored form", events[i].Seq)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
	}
	buf.WriteString(`],"total":`)
	buf.WriteString(strconv.FormatUint(total, 10))
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}
