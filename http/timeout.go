package http

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/julienschmidt/httprouter"
)

// withTimeout runs next with a context that expires after the handler timeout, and
// answers 503 "timeout" when it does, without waiting for next: a handler stuck in
// something that ignores its context must not hold the client. next writes into a
// buffer that is copied out only if it finishes in time, so the two answers never
// mix. Responses of these handlers are bounded (limit ≤ 1000), so buffering is cheap.
func (s *Server) withTimeout(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		ctx, cancel := context.WithTimeout(r.Context(), s.handlerTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		tw := &timeoutWriter{h: make(http.Header)}
		done := make(chan struct{})
		panicked := make(chan *handlerPanic, 1)
		go func() {
			defer func() {
				if v := recover(); v != nil {
					s.handOverPanic(tw, panicked, newHandlerPanic(v), r)
				}
			}()
			next(tw, r, ps)
			close(done)
		}()
		select {
		case p := <-panicked:
			// Re-raised here so the router's panic handler answers on this goroutine.
			panic(p)
		case <-done:
			tw.copyTo(w)
		case <-ctx.Done():
			tw.mu.Lock()
			select {
			case <-done: // finished just in time; its answer wins
				tw.mu.Unlock()
				tw.copyTo(w)
				return
			case p := <-panicked:
				tw.mu.Unlock()
				panic(p)
			default:
			}
			tw.abandoned = true
			tw.mu.Unlock()
			s.writeError(w, r, ctx.Err())
		}
	}
}

// handOverPanic passes a handler's panic to the request goroutine, or, if that has
// already answered the client with a timeout, logs it here so it is not lost. The
// lock orders this against the abandonment in withTimeout.
func (s *Server) handOverPanic(tw *timeoutWriter, to chan<- *handlerPanic, p *handlerPanic, r *http.Request) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.abandoned {
		to <- p // buffered; read by withTimeout
		return
	}
	s.logger.LogAttrs(r.Context(), slog.LevelError, "handler panicked after its timeout",
		slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("panic", fmt.Sprint(p.value)), slog.String("stack", string(p.stack)))
}

// timeoutWriter is the buffer a timed handler writes into.
type timeoutWriter struct {
	mu        sync.Mutex
	h         http.Header
	buf       bytes.Buffer
	status    int
	abandoned bool // the client has been answered; later writes go nowhere
}

func (tw *timeoutWriter) Header() http.Header { return tw.h }

// copyTo sends the buffered response; the handler has returned.
func (tw *timeoutWriter) copyTo(w http.ResponseWriter) {
	dst := w.Header()
	for k, vv := range tw.h {
		dst[k] = vv
	}
	if tw.status == 0 {
		tw.status = http.StatusOK
	}
	w.WriteHeader(tw.status)
	_, _ = w.Write(tw.buf.Bytes())
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
	return tw.buf.Write(p)
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
