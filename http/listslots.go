package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// withListSlot runs next once one of the server's list slots is free. A list
// page may hold up to the byte budget of stored records, and building one is
// CPU work for as long as it takes to copy them: without a bound, a handful of
// clients reading full pages of large events would take every core and every
// buffer, and health checks and writes would queue behind them. There is one
// slot per core but one (at least one slot), so one core is always left for
// everything else, and the pages in flight hold a few budgets. Measured with
// civnode bench --hostile on 2 cores: two slots let health checks wait up to
// 60-80 ms, one slot 6-14 ms, while small since-pages still serve 570-660k
// events/s. A request waits for a slot within its handler timeout; past it, the
// client gets 503 timeout like any handler that runs out of time.
//
// Before the slot, the request takes a page's worth of the response budget
// (pageReservation), waiting for it at most a second: a reader the budget
// cannot admit is answered 503 busy before it queues for a slot or reads
// anything, so the line for slots is bounded by the budget, not by the number
// of readers. What the page does not use is given back once it is built.
func (s *Server) withListSlot(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if tw, ok := w.(*timeoutWriter); ok {
			if err := tw.reserve(s.pageReservation()); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
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
