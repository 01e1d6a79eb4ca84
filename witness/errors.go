package witness

import "errors"

// ErrCosignatureTime is a witness's cosignature dated outside
// CosignatureWindow of the node's clock: observers check a cosignature's
// age, so one dated at 0 or far in the future witnesses nothing.
var ErrCosignatureTime = errors.New("cosignature time outside the accepted window")

// ErrRedirect is a witness's redirect the submitter does not follow: to
// another scheme, host or port, or more than maxRedirects in a row. The
// checkpoint is never re-posted anywhere but the witness the operator named.
var ErrRedirect = errors.New("redirect refused")

// ErrHeldSize is a 409 naming a size the witness cannot hold: beyond
// eventlog.MaxTreeSize or beyond the tree the node submitted.
var ErrHeldSize = errors.New("the witness names a size it cannot hold")

// ErrHeldAnotherTree is a witness's 409 naming the very size asked about:
// it holds another tree of that size, so the log it cosigned and the one
// asking differ there.
var ErrHeldAnotherTree = errors.New("the witness holds another tree of this size")
