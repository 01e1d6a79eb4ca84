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

// ErrStateBehind is a round of the state tree asked for a seq the tree has
// already passed.
var ErrStateBehind = errors.New("the state tree is already past that seq")

// errChange is a recorded state change, or the tree's note of which one holds
// an entry's value, that does not decode: the derived space was damaged.
var errChange = errors.New("malformed state change")
