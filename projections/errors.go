package projections

import "errors"

// ErrBadCursor is a cursor this model did not hand out.
var ErrBadCursor = errors.New("bad cursor")

// errStore marks a failure of the model store itself, as opposed to an event
// the fold refuses: the former fails the log, the latter is counted.
var errStore = errors.New("read model store")

// errNotOurs marks an event a model does not fold: another model's type, or an
// event of a shared type that is about something else, such as a payment.settled
// without a mission.
var errNotOurs = errors.New("not this model's event")
