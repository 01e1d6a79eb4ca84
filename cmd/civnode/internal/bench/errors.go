package bench

import (
	"errors"
	"fmt"
)

// errHostileBusy is a read the node answered 503 busy (its response budget).
var errHostileBusy = errors.New("503 busy")

// errNotCommitted is GET /v1/state/proof's 503 state_not_committed: the node
// has no commitment to its state yet.
var errNotCommitted = errors.New("no state commitment yet")

// statusError is an answer whose status is not the one asked for.
type statusError struct {
	method, path string
	got, want    int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: status %d, want %d: %s", e.method, e.path, e.got, e.want, e.body)
}
