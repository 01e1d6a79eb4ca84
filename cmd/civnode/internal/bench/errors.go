package bench

import "errors"

// errHostileBusy is a read the node answered 503 busy (its response budget).
var errHostileBusy = errors.New("503 busy")
