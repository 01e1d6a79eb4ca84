package servicenet

import (
	"errors"
	"net/http"
	"time"
)

// Attempt is one HTTP exchange with the registry, as Config.Observe sees it: a
// retried read is several attempts, so a flaky registry shows in the counts
// even when the caller's request succeeds in the end.
type Attempt struct {
	Op       string        // the operation, one of the Op* names
	Outcome  string        // how it ended, one of the Outcome* names
	Duration time.Duration // from sending the request to its body read in full
}

// The operations of Attempt.Op.
const (
	OpListAgents = "list_agents"
	OpCard       = "get_card"
	OpInvoke     = "invoke"
	OpGetTask    = "get_task"
)

// The outcomes of Attempt.Outcome: a fixed set, so a metric labelled by it
// stays small whatever the registry answers.
const (
	OutcomeOK              = "ok"               // 2xx
	OutcomePaymentRequired = "payment_required" // 402, answered by a paid retry
	OutcomeClientError     = "client_error"     // another 4xx
	OutcomeServerError     = "server_error"     // 5xx and anything else
	OutcomeTimeout         = "timeout"          // the attempt's read timeout
	OutcomeUnreachable     = "unreachable"      // no answer: refused, reset, DNS
	OutcomeCanceled        = "canceled"         // the caller gave up first
)

// outcomeOfStatus classifies an answer by its status.
func outcomeOfStatus(status int) string {
	switch {
	case status >= 200 && status <= 299:
		return OutcomeOK
	case status == http.StatusPaymentRequired:
		return OutcomePaymentRequired
	case status >= 400 && status <= 499:
		return OutcomeClientError
	}
	return OutcomeServerError
}

// outcomeOfError classifies an attempt that got no answer, from the error
// transportError made of it.
func outcomeOfError(err error) string {
	var e *Error
	if errors.As(err, &e) {
		switch e.Kind {
		case ErrTimeout:
			return OutcomeTimeout
		case ErrUnavailable:
			return OutcomeUnreachable
		}
	}
	return OutcomeCanceled
}

// observed reports one attempt of cl to Config.Observe.
func (c *Client) observed(cl *call, start time.Time, outcome string) {
	if c.observe != nil {
		c.observe(Attempt{Op: cl.op, Outcome: outcome, Duration: time.Since(start)})
	}
}
