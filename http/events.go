package http

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

// handleEvents answers GET /v1/events?since=&limit=&type= with
// {"events":[…],"total":N}, oldest first; total counts every match before limit.
// Paging with since=<timestamp of the last event seen> visits each event once,
// because timestamps strictly increase along the chain.
//
// A page also ends at the server's byte budget (Options.PageBytes), after fewer
// than limit events; it then carries PageTruncatedHeader and the body is framed
// as always, so a client that pages by since= and total needs nothing new. One
// event larger than the budget is still served, alone on its page.
//
// Events are written as stored, straight from the store's iterator into the
// response: encoding/json would re-encode them (it escapes <, > and &, which RFC
// 8785 does not), and a client verifying signatures needs the bytes that were
// signed. The loop stops with the request's context, and on the first failed
// write (a handler past its timeout writes nowhere).
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	qry, err := eventsQuery(r.URL.Query())
	if err != nil {
		return err
	}
	setJSONHeaders(w.Header())
	full, err := s.writeEvents(r.Context(), w, qry)
	if full {
		// Timed handlers write into a buffer that is sent only once they return
		// (timeout.go), so a header set after the body still goes out.
		w.Header().Set(PageTruncatedHeader, "true")
	}
	return err
}

// eventsQuery parses the query of GET /v1/events (and the arguments of the
// query_events tool, given as the same parameters).
func eventsQuery(q url.Values) (eventlog.Query, error) {
	limit, err := queryLimit(q)
	if err != nil {
		return eventlog.Query{}, err
	}
	since, err := querySince(q)
	if err != nil {
		return eventlog.Query{}, err
	}
	typ, err := queryFilter(q, "type")
	if err != nil {
		return eventlog.Query{}, err
	}
	return eventlog.Query{Since: since, Type: typ, Limit: limit}, nil
}

// writeEvents writes the body of an events page to w, the events as stored;
// full reports that the byte budget ended the page before its limit.
func (s *Server) writeEvents(ctx context.Context, w io.Writer, qry eventlog.Query) (full bool, err error) {
	if _, err := w.Write(eventsOpen); err != nil {
		return false, err
	}
	page := newListWriter(w, s.pageBudget(ctx), len(eventsOpen), eventsCloseMax)
	total, err := s.log.QueryRaw(ctx, qry, func(seq uint64, raw []byte) (bool, error) {
		if s.eventsProgress != nil {
			s.eventsProgress(ctx, seq)
		}
		return page.add(raw)
	})
	if err != nil {
		if ctx.Err() != nil {
			// Timed out or the client went away; a failed write is only a symptom.
			return false, ctx.Err()
		}
		return false, fmt.Errorf("query events: %w", err)
	}
	closing := make([]byte, 0, eventsCloseMax)
	closing = append(closing, `],"total":`...)
	closing = strconv.AppendUint(closing, total, 10)
	closing = append(closing, "}\n"...)
	_, err = w.Write(closing)
	return page.full, err
}

var eventsOpen = []byte(`{"events":[`)

// eventsCloseMax is the longest closing of an events page: `],"total":`, 20
// digits and "}\n".
const eventsCloseMax = len(`],"total":`) + 20 + len("}\n")
