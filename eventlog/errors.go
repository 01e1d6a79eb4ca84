package eventlog

import (
	"errors"
	"fmt"
)

var (
	// ErrBrokenChain means an event does not verify: its id, signature, seq,
	// timestamp or link to the event before it is wrong.
	ErrBrokenChain = errors.New("broken chain")
	// ErrTornTail means the newest events in the store do not form a valid end of
	// the chain. The log refuses to open rather than guess a repair.
	ErrTornTail = errors.New("torn tail")
	// ErrBadBundle means an export bundle is malformed or its seal does not verify.
	ErrBadBundle = errors.New("bad bundle")
	// ErrFailed means an earlier write failed to become durable; the log accepts no
	// more writes (fail-stop) until the process restarts.
	ErrFailed = errors.New("event log failed")
	// ErrClosed means the log has been closed.
	ErrClosed = errors.New("event log closed")
	// ErrInvalidDraft means a draft has a malformed type or payload.
	ErrInvalidDraft = errors.New("invalid draft")
)

// ChainError names the first event at fault. Seq is 0 when the fault is in the
// bundle frame rather than in an event.
type ChainError struct {
	Seq    uint64
	Reason string
	Err    error // ErrBrokenChain, ErrTornTail or ErrBadBundle
}

func (e *ChainError) Error() string {
	if e.Seq == 0 {
		return fmt.Sprintf("%v: %s", e.Err, e.Reason)
	}
	return fmt.Sprintf("%v at seq %d: %s", e.Err, e.Seq, e.Reason)
}

func (e *ChainError) Unwrap() error { return e.Err }

func chainErr(kind error, seq uint64, format string, args ...any) *ChainError {
	return &ChainError{Seq: seq, Reason: fmt.Sprintf(format, args...), Err: kind}
}
