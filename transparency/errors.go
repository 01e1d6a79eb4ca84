package transparency

import "errors"

var (
	// ErrRedirect is a redirect a Client does not follow: to another
	// scheme, host or port than the request's, or more than maxRedirects in
	// a row.
	ErrRedirect = errors.New("redirect refused")

	// errStalled is an answer of which no byte arrived for observerTimeout:
	// a source that hangs, which a follower retries (Transient).
	errStalled = errors.New("no byte arrived for " + observerTimeout.String())

	// errLineTooLong is a line of an event bundle longer than readLine's
	// limit.
	errLineTooLong = errors.New("line too long")
)
