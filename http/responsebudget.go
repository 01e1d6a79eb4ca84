package http

import (
	"container/list"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// responseBudget bounds the bytes of response bodies the node holds in memory at
// once, over every request (Options.ResponseBudget, docs/limits.md). A page is
// bounded by the page budget, but without this the sum is not: each reader of a
// full page holds its buffer until its client has taken it, up to the write
// timeout, so memory grew with the number of readers. Like CockroachDB's SQL
// memory monitor, a response takes bytes from the budget as its buffer grows
// and gives them back once the body has been written to the client (or the
// client has been cut off at the write deadline, or the request has ended).
//
// A read over the budget waits in line for at most budgetWait, then is answered
// 503 busy with Retry-After: 1, having done nothing: the line is bounded by that
// wait, never by the number of readers. What has been done cannot be refused:
// the answer of a write (any method but GET and HEAD) and an error body take
// their bytes at once (force), beyond the budget if need be; they are small. GET
// /v1/health and POST /v1/node/proof are never counted, so they never wait
// behind readers.
//
// The waiters are served first come, first served, as in
// golang.org/x/sync/semaphore, which this follows; it adds force and the
// figures the metrics report.
type responseBudget struct {
	mu      sync.Mutex
	size    int64
	used    int64     // may pass size after a force
	waiters list.List // of *budgetWaiter, oldest first

	inUse   atomic.Int64  // used, for the metrics without the lock
	refused atomic.Uint64 // reads answered 503 busy
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once the bytes are granted
}

// DefaultResponseBudgetPages is the default of Options.ResponseBudget in pages:
// 16 × the page budget, 64 MiB with the default 4 MiB pages.
const DefaultResponseBudgetPages = 16

// budgetWait is how long a read waits for the budget before it is answered 503
// busy: long enough to ride out a burst of pages being sent, short enough that
// waiting readers never pile up.
const budgetWait = time.Second

// errBusy is the answer to a read the response budget could not admit in time.
var errBusy = &Error{Status: http.StatusServiceUnavailable, Code: codeBusy, RetryAfter: time.Second,
	Message: "the node holds as many response bytes as it may at once; retry shortly"}

func newResponseBudget(size int64) *responseBudget {
	return &responseBudget{size: size}
}

// acquire takes n bytes, waiting in line until they fit or ctx ends. A request
// larger than the whole budget can never fit and fails at once.
func (b *responseBudget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if b.used+n <= b.size && b.waiters.Len() == 0 {
		b.take(n)
		b.mu.Unlock()
		return nil
	}
	if n > b.size {
		b.mu.Unlock()
		return errBusy
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	select {
	case <-w.ready:
		// Granted as ctx ended: the caller gives up, so hand the bytes back.
		b.take(-n)
		b.notify()
	default:
		front := b.waiters.Front() == e
		b.waiters.Remove(e)
		if front {
			// Smaller requests behind this one may fit now.
			b.notify()
		}
	}
	b.mu.Unlock()
	return ctx.Err()
}

// tryAcquire takes n bytes if they fit now and no one is waiting.
func (b *responseBudget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n <= b.size && b.waiters.Len() == 0 {
		b.take(n)
		return true
	}
	return false
}

// force takes n bytes at once, beyond the budget if need be: for bytes that are
// already owed (a write's answer, an error body). Later acquirers wait until
// enough has been released.
func (b *responseBudget) force(n int64) {
	b.mu.Lock()
	b.take(n)
	b.mu.Unlock()
}

// release gives back n bytes taken by acquire or force.
func (b *responseBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.take(-n)
	b.notify()
	b.mu.Unlock()
}

func (b *responseBudget) take(n int64) {
	b.used += n
	b.inUse.Store(b.used)
}

// notify grants the waiters at the front of the line whose bytes now fit.
func (b *responseBudget) notify() {
	for {
		e := b.waiters.Front()
		if e == nil {
			return
		}
		w := e.Value.(*budgetWaiter)
		if b.used+w.n > b.size {
			return // first come, first served: the rest wait behind it
		}
		b.take(w.n)
		b.waiters.Remove(e)
		close(w.ready)
	}
}

// chunksOf is n rounded up to whole buffer chunks, which is what a buffer of n
// bytes holds (chunkbuffer.go).
func chunksOf(n int64) int64 {
	return (n + chunkSize - 1) / chunkSize * chunkSize
}

// pageReservation is what a list request takes from the budget before it
// builds its page: the page budget in whole chunks, and one chunk for the
// body's framing. Taking it first means a list that cannot have it waits or
// is refused before it holds a list slot or reads anything.
func (s *Server) pageReservation() int64 {
	return chunksOf(int64(s.pageBytes)) + chunkSize
}
