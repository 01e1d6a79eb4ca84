package http

import "time"

// handlerWorkers runs the timed handlers (withTimeoutOf) on goroutines kept
// between requests, because a kept goroutine's stack has grown already: a
// goroutine starts with a small stack, and a create's handler (body walk,
// decode, the command, the answer's encoding) grows it several times over,
// each time copying it whole (docs/benchmarks.md, "The HTTP layer").
//
// A handler is given to an idle worker if there is one, and to a new one
// otherwise, so a slow or abandoned handler never holds up another: the
// workers are as many as the handlers running at once. A worker left idle for
// workerIdle ends.
type handlerWorkers struct {
	work chan func()
}

// workerIdle is how long a worker waits for its next handler before it ends.
const workerIdle = 5 * time.Second

func newHandlerWorkers() *handlerWorkers {
	return &handlerWorkers{work: make(chan func())}
}

// run runs f on a worker. f must not panic: the caller recovers.
func (p *handlerWorkers) run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

func (p *handlerWorkers) worker(f func()) {
	f()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			idle.Reset(workerIdle)
		case <-idle.C:
			return
		}
	}
}
