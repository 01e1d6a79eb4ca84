package transparency

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// Transient reports whether err is a failure that may pass by itself: a
// connection refused, reset or cut short, a timeout (errStalled included),
// an answer 5xx or 429 (the latter once the client's own retries are spent),
// or a tree not cosigned by the quorum of witnesses required yet
// (ErrNotWitnessed: a witness lags, or has not been asked yet). A follower
// asks again later (RetryDelay). Anything else is not: evidence (Evidence),
// a refused token or redirect, an answer 404 or one that does not parse.
func Transient(err error) bool {
	if err == nil || Evidence(err) {
		return false
	}
	for _, problem := range []error{ErrRedirect, eventlog.ErrBrokenChain, eventlog.ErrTreeSize} {
		if errors.Is(err, problem) {
			return false
		}
	}
	if errors.Is(err, ErrNotWitnessed) {
		return true
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.code >= http.StatusInternalServerError || se.code == http.StatusTooManyRequests
	}
	if errors.Is(err, errStalled) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Evidence reports whether err is a problem with what the source served that
// Mirror kept evidence of: a fork, a rollback, another key, a seal, tile or
// event that does not verify. A follower stops following on it, and never
// retries it: the source's answer will not change by itself, and the
// evidence is what an operator acts on.
func Evidence(err error) bool {
	for _, problem := range []error{ErrBadEvent, ErrBadSeal, ErrForked, ErrRolledBack, ErrAnotherKey, errBadTiles} {
		if errors.Is(err, problem) {
			return true
		}
	}
	return false
}

// MaxRetryDelay caps RetryDelay, unless the follower's interval is longer.
const MaxRetryDelay = 5 * time.Minute

// RetryDelay is how long a follower that polls every interval waits after
// its attempt-th transient failure in a row (from 1): the interval doubled
// for each failure before, at most the larger of MaxRetryDelay and the
// interval, and of that between half and all, at random, so that the
// mirrors of one source that failed them all at once do not come back all
// at once.
func RetryDelay(interval time.Duration, attempt int) time.Duration {
	limit := max(MaxRetryDelay, interval)
	d := max(interval, time.Millisecond)
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}
