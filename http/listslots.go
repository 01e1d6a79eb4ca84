package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// withListSlot runs next once one of the server's list slots is free. A list
// page may hold up to the byte budget of stored records, and building one is
// CPU work for as long as it takes to copy them: without a bound, a handful of
// clients reading full pages of large events would take every core and every
// buffer, and health checks and writes would queue behind them. With as many
// slots as cores (at least two) the pages are built as fast as the machine
// allows, the memory they hold is a few budgets, and everything else still gets
// a core. A request waits for a slot within its handler timeout; past it, the
// client gets 503 timeout like any handler that runs out of time.
func (s *Server) withListSlot(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		select {
		case s.listSlots <- struct{}{}:
		case <-r.Context().Done():
			s.writeError(w, r, r.Context().Err())
			return
		}
		defer func() { <-s.listSlots }()
		next(w, r, ps)
	}
}
