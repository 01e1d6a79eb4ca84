package http

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/julienschmidt/httprouter"
)

// withTimeoutOf runs next with a context that expires after timeout(), and
// answers 503 "timeout" when it does, without waiting for next: a handler stuck in
// something that ignores its context must not hold the client. next writes into a
// buffer that is copied out only if it finishes in time, so the two answers never
// mix. Buffering is bounded: list responses end at the page byte budget
// (Options.PageBytes), and an abandoned handler's buffer is dropped at once and
// its later writes fail, so a loop over records stops on them if not on the
// context.
//
// Copying out runs under a write deadline of writeTimeout (responseWriteTimeout),
// set once the response is ready: a client that does not read is dropped then,
// which frees the response and the connection. A timed request therefore holds a
// connection for at most the handler timeout plus the write timeout.
//
// The buffer takes its bytes from the response budget (responsebudget.go) as it
// grows, and gives them back once it has been copied out or dropped.
//
// The timeout is read per request so that tests may shorten it; budget nil
// leaves the response uncounted (health, the node proof).
func (s *Server) withTimeoutOf(timeout func() time.Duration, budget *responseBudget, next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout())
		defer cancel()
		r = r.WithContext(ctx)
		tw := &timeoutWriter{h: make(http.Header), buf: &chunkBuffer{}, budget: budget, ctx: ctx, wait: s.budgetWait,
			refusable: r.Method == http.MethodGet || r.Method == http.MethodHead}
		done := make(chan struct{})
		panicked := make(chan *handlerPanic, 1)
		s.handlers.Add(1)
		s.workers.run(func() {
			defer s.handlers.Done()
			defer func() {
				if v := recover(); v != nil {
					s.handOverPanic(tw, panicked, newHandlerPanic(v), r)
				}
			}()
			next(tw, r, ps)
			close(done)
		})
		select {
		case p := <-panicked:
			// Re-raised here so the router's panic handler answers on this goroutine.
			panic(p)
		case <-done:
			s.sendBuffered(w, r, tw)
		case <-ctx.Done():
			tw.mu.Lock()
			select {
			case <-done: // finished just in time; its answer wins
				tw.mu.Unlock()
				s.sendBuffered(w, r, tw)
				return
			case p := <-panicked:
				tw.mu.Unlock()
				panic(p)
			default:
			}
			tw.abandoned = true
			tw.buf.Reset()
			tw.buf = nil
			tw.releaseBudget()
			tw.mu.Unlock()
			if r.ContentLength != 0 { // a body, declared or chunked, may be unread
				s.endRequestBody(w)
			}
			s.setWriteDeadline(w)
			s.writeError(w, r, ctx.Err())
		}
	}
}

// sendBuffered copies a finished handler's response to the client under the
// write deadline and recycles the buffer. The budget the response holds is
// given back once the copy has ended: the client has taken the body, or has
// been cut off at the deadline. A response the budget refused is answered 503
// busy instead, whatever the handler made of the refusal.
func (s *Server) sendBuffered(w http.ResponseWriter, r *http.Request, tw *timeoutWriter) {
	s.setWriteDeadline(w)
	if tw.busy {
		tw.buf.Reset()
		tw.buf = nil
		tw.releaseBudget()
		s.writeError(w, r, errBusy)
		return
	}
	tw.trimBudget()
	err := tw.copyTo(w)
	tw.buf.Reset()
	tw.buf = nil
	tw.releaseBudget()
	if s.responseSent != nil {
		s.responseSent(err)
	}
}

// endRequestBody gives up on the rest of a request body once the handler has
// timed out. Without it net/http, before it sends the 503, tries to read what is
// left of the body to keep the connection reusable, and a client that declared
// more than it sends (Content-Length: 100, then 10 bytes) would hold the answer
// until the read timeout. An expired read deadline ends that read, and the
// abandoned handler's, at once; the connection is then closed after the answer,
// since the unread body leaves it unusable.
func (s *Server) endRequestBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	// ErrNotSupported (a recorder in tests) has no connection to end.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// setWriteDeadline bounds the writes of the rest of this response. A write that
// misses it fails, and net/http then closes the connection.
func (s *Server) setWriteDeadline(w http.ResponseWriter) {
	// ErrNotSupported (a recorder in tests) has no connection to bound.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.writeTimeout))
}

// handOverPanic passes a handler's panic to the request goroutine, or, if that has
// already answered the client with a timeout, logs it here so it is not lost. The
// lock orders this against the abandonment in withTimeoutOf.
func (s *Server) handOverPanic(tw *timeoutWriter, to chan<- *handlerPanic, p *handlerPanic, r *http.Request) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.abandoned {
		to <- p // buffered; read by withTimeoutOf
		return
	}
	s.logger.LogAttrs(r.Context(), slog.LevelError, "handler panicked after its timeout",
		slog.String(logkey.Method, r.Method), slog.String(logkey.Path, r.URL.Path),
		slog.String(logkey.Panic, fmt.Sprint(p.value)), slog.String(logkey.Stack, string(p.stack)))
}

// timeoutWriter is the buffer a timed handler writes into. Nothing reaches the
// client before the handler returns, so a handler may still set headers after
// writing its body.
type timeoutWriter struct {
	mu        sync.Mutex
	h         http.Header
	buf       *chunkBuffer // nil once abandoned
	status    int
	abandoned bool // the client has been answered; later writes go nowhere

	// The response budget (responsebudget.go); nil: not counted.
	budget *responseBudget
	ctx    context.Context // the request's, which ends a wait for the budget
	wait   time.Duration   // the longest this response waits for the budget, in all
	// waitUntil ends every wait of this response; set by its first.
	waitUntil time.Time
	// refusable: a read (GET, HEAD), which the budget may refuse. Any other
	// answer, and an error body, takes its bytes at once (force).
	refusable bool
	held      int64 // bytes of the budget this response holds
	busy      bool  // the budget refused this response: it is answered 503 busy
}

func (tw *timeoutWriter) Header() http.Header { return tw.h }

// copyTo sends the buffered response; the handler has returned. The body's length
// is known, so it goes out with a Content-Length rather than chunked.
func (tw *timeoutWriter) copyTo(w http.ResponseWriter) error {
	dst := w.Header()
	for k, vv := range tw.h {
		dst[k] = vv
	}
	if tw.status == 0 {
		tw.status = http.StatusOK
	}
	if bodyAllowed(tw.status) && dst.Get("Content-Length") == "" {
		dst.Set("Content-Length", strconv.Itoa(tw.buf.Len()))
	}
	w.WriteHeader(tw.status)
	if tw.buf.Len() == 0 {
		return nil
	}
	_, err := tw.buf.WriteTo(w)
	return err
}

// bodyAllowed reports whether a response with status may carry a body (RFC 9110
// §6.4.1).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

func (tw *timeoutWriter) WriteHeader(status int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.status == 0 && !tw.abandoned {
		tw.status = status
	}
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.abandoned {
		return 0, http.ErrHandlerTimeout
	}
	if tw.status == 0 {
		tw.status = http.StatusOK
	}
	if err := tw.grow(len(p)); err != nil {
		return 0, err
	}
	return tw.buf.Write(p)
}

// grow takes from the budget what the buffer needs to hold n more bytes: whole
// chunks, which is what the buffer allocates. tw.mu is held.
func (tw *timeoutWriter) grow(n int) error {
	if tw.budget == nil {
		return nil
	}
	if tw.busy {
		return errBusy
	}
	if need := chunksOf(int64(tw.buf.Len()+n)) - tw.held; need > 0 {
		return tw.take(need)
	}
	return nil
}

// reserve takes n bytes of the budget up front, less what the response
// already holds: a list takes its page before it builds it (withListSlot).
func (tw *timeoutWriter) reserve(n int64) error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.budget == nil || tw.abandoned {
		return nil
	}
	if tw.busy {
		return errBusy
	}
	if need := n - tw.held; need > 0 {
		return tw.take(need)
	}
	return nil
}

// take takes n bytes of the budget for this response: at once if it is not
// refusable, else waiting in line until the response's wait runs out or its
// context ends, after which the response is busy. tw.mu is held; a wait ends
// with the request's context, which is also what abandonment waits for.
func (tw *timeoutWriter) take(n int64) error {
	if !tw.refusable {
		tw.budget.force(n)
		tw.held += n
		return nil
	}
	if tw.budget.tryAcquire(n) {
		tw.held += n
		return nil
	}
	if tw.waitUntil.IsZero() {
		tw.waitUntil = time.Now().Add(tw.wait)
	}
	ctx, cancel := context.WithDeadline(tw.ctx, tw.waitUntil)
	err := tw.budget.acquire(ctx, n)
	cancel()
	if err != nil {
		tw.busy = true
		tw.budget.refused.Add(1)
		return errBusy
	}
	tw.held += n
	return nil
}

// trimBudget gives back what a finished response reserved and did not use.
func (tw *timeoutWriter) trimBudget() {
	if tw.budget == nil {
		return
	}
	if extra := tw.held - chunksOf(int64(tw.buf.Len())); extra > 0 {
		tw.budget.release(extra)
		tw.held -= extra
	}
}

// releaseBudget gives back all the response holds.
func (tw *timeoutWriter) releaseBudget() {
	if tw.budget != nil {
		tw.budget.release(tw.held)
		tw.held = 0
	}
}

// discard drops the status and body written so far, for a handler that failed
// after starting its answer; headers stay. The error body that follows is
// small and always answered: it takes its budget at once.
func (tw *timeoutWriter) discard() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.abandoned {
		return
	}
	tw.status = 0
	tw.buf.Reset()
	tw.refusable = false
}

// handlerPanic carries a panic and the stack where it happened across goroutines,
// since re-raising it elsewhere would lose the stack.
type handlerPanic struct {
	value any
	stack []byte
}

func newHandlerPanic(v any) *handlerPanic {
	return &handlerPanic{value: v, stack: debug.Stack()}
}
