package transparency

import (
	"context"
	"errors"
	"io"
	"time"
)

// watchdog cancels an answer's context with errStalled once no byte of it
// arrived for idle: a bound on a source that hangs, which still lets a large
// answer on a slow link take as long as it needs.
type watchdog struct {
	t    *time.Timer
	idle time.Duration
}

// watch is the watchdog of one answer of c, nil for a client without an
// idle bound (every method of a nil watchdog does nothing).
func (c *Client) watch(cancel context.CancelCauseFunc) *watchdog {
	if c.idle <= 0 {
		return nil
	}
	return &watchdog{t: time.AfterFunc(c.idle, func() { cancel(errStalled) }), idle: c.idle}
}

// reset starts the wait for the next byte again.
func (w *watchdog) reset() {
	if w != nil {
		w.t.Reset(w.idle)
	}
}

func (w *watchdog) stop() {
	if w != nil {
		w.t.Stop()
	}
}

// watchedBody is the body of a 200 answer: each read that brings bytes
// resets the watchdog, and closing it ends the request's context.
type watchedBody struct {
	io.ReadCloser
	ctx    context.Context
	wd     *watchdog
	cancel context.CancelCauseFunc
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.wd.reset()
	}
	if err != nil && err != io.EOF {
		err = stalledOr(b.ctx, err)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.wd.stop()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// stalledOr is errStalled when the watchdog ended ctx (the transport then
// reports only that the context was canceled), else err.
func stalledOr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStalled) {
		return errStalled
	}
	return err
}
