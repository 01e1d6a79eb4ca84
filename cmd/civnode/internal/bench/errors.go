package bench

import "errors"

// errHostileBusy is a read the node answered 503 busy (its response budget).
var errHostileBusy = errors.New("503 busy")

// errNotCommitted is GET /v1/state/proof's 503 state_not_committed: the node
// has no commitment to its state yet.
var errNotCommitted = errors.New("no state commitment yet")
