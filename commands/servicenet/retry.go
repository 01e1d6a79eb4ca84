package servicenet

import (
	"context"
	"errors"
	"fmt"
	"github.com/civnode/civnode/internal/logkey"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retries. Only reads retry (ListAgents, Card, GetTask): an invoke may charge
// or start work at the registry, so a lost answer must not become a second
// call. A retry follows a transport failure, or a status that says "later"
// rather than "no"; a refusal (4xx) would only be refused again.

// retryableStatus reports the statuses that ask the caller to come back.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		(status >= 500 && status <= 599)
}

// do runs cl, once or, when it is idempotent, up to 1+retries times. It
// returns the last answer, whatever its status, for the caller to map; an
// error is a transport failure (*Error), the caller's own cancellation, or a
// request that could not be built.
func (c *Client) do(ctx context.Context, cl *call) (*answer, error) {
	attempts := 1
	if cl.idempotent {
		attempts += c.retries
	}
	for attempt := 1; ; attempt++ {
		ans, err := c.exchange(ctx, cl, attempt)
		var regErr *Error
		switch {
		case err == nil && !retryableStatus(ans.status):
			return ans, nil
		case err != nil && (ctx.Err() != nil || !errors.As(err, &regErr)):
			return nil, err
		}
		if attempt >= attempts {
			return ans, withAttempts(err, attempt)
		}
		wait := c.backoff(attempt, ans)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			// The caller would give up while we sleep: its last answer is
			// worth more than a time-out.
			return ans, withAttempts(err, attempt)
		}
		c.log.Debug("registry retry", logkey.Method, cl.method, logkey.Path, cl.path, logkey.Attempt, attempt, logkey.Wait, wait)
		if err := c.sleep(ctx, wait); err != nil {
			return nil, callerDone(ctx)
		}
	}
}

// withAttempts notes in a transport error how many attempts it took.
func withAttempts(err error, attempts int) error {
	var regErr *Error
	if attempts > 1 && errors.As(err, &regErr) {
		regErr.Message += fmt.Sprintf(" (%d attempts)", attempts)
	}
	return err
}

// backoff is the wait after attempt number attempt (from 1). It is the
// registry's Retry-After when it gave one, else full jitter: uniform in
// [0, min(BackoffMax, BackoffBase·2^(attempt-1))], which spreads the retries
// of many nodes instead of synchronising them. Either way at most BackoffMax.
func (c *Client) backoff(attempt int, ans *answer) time.Duration {
	if ans != nil && ans.retryAfter >= 0 {
		return min(ans.retryAfter, c.backoffMax)
	}
	ceiling := c.backoffMax
	if shift := attempt - 1; shift < 62 && c.backoffBase <= c.backoffMax>>shift {
		ceiling = c.backoffBase << shift
	}
	return c.jitter(ceiling)
}

// fullJitter draws uniformly from [0, ceiling].
func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date (RFC 9110
// §10.2.3); -1 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return -1
}

// sleepContext waits d, or less when ctx ends first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// callerDone is the error of a call whose own context ended. A cancellation
// is returned as itself, so errors.Is(err, context.Canceled) holds and the
// caller can tell its own decision from the registry's failure; a passed
// deadline is a time-out like any other.
func callerDone(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("registry call: %w", err)
	}
	return &Error{Kind: ErrTimeout, Message: "the caller's deadline passed before the registry answered"}
}
