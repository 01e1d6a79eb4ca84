package eventlog

import (
	"errors"
	"fmt"
	"strings"
)

// Every sentinel names the package, so that a message that travels far from
// here still says where it began.
var (
	// ErrBrokenChain means an event does not verify: its id, signature, seq,
	// timestamp or link to the event before it is wrong.
	ErrBrokenChain = errors.New("broken chain")
	// ErrCorrupt means the store does not hold what the log wrote: a block of an
	// sstable fails its checksum, or one of the newest events that Open checks
	// fails its id, signature, link or index check. The log never repairs it. Once
	// any read has met corruption the log is failed (Healthy) and takes no more
	// writes: restore the data dir from a backup. Log.Verify, like VerifyBundle,
	// reports a readable event that fails its checks as ErrBrokenChain.
	ErrCorrupt = errors.New("corrupt store")
	// ErrTornTail marks a *TornTail: the newest write-ahead log ended inside
	// a record, the group of appends a process was writing when it stopped.
	// That group was never acknowledged, and recovery drops it. It is a
	// report, not a failure: Open succeeds and Log.TornTail returns it (torn.go).
	ErrTornTail = errors.New("torn tail")
	// ErrBadBundle means an export bundle is malformed or its seal does not verify.
	ErrBadBundle = errors.New("bad bundle")
	// ErrFailed means an earlier write failed to become durable, or a read met
	// corruption; the log accepts no more writes (fail-stop) until the process
	// restarts.
	ErrFailed = errors.New("failed")
	// ErrClosed means the log has been closed.
	ErrClosed = errors.New("closed")
	// ErrInvalidDraft means a draft has a malformed type or payload.
	ErrInvalidDraft = errors.New("invalid draft")
	// ErrNotFound is returned for an event that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrWrongKey means the node key given to Open is not the key the chain was
	// created with.
	ErrWrongKey = errors.New("wrong node key")
	// ErrTreeSize means a tree size from outside the node is beyond
	// MaxTreeSize (treesize.go).
	ErrTreeSize = errors.New("tree size out of range")
)

// ChainError names the first event at fault, or the range of events that could
// not be read. Seq is 0 when the fault is in the bundle frame, or in a part of
// the store that holds no event.
type ChainError struct {
	Seq uint64
	// Last, when above Seq, ends the range Seq..Last of events at fault: those a
	// damaged block of the store holds.
	Last   uint64
	Reason string
	Err    error // ErrBrokenChain, ErrCorrupt or ErrBadBundle
}

// Error reads "<kind> at seq N: <reason>". The kind drops the package prefix of
// its sentinel: a chain error already says that it concerns the chain.
func (e *ChainError) Error() string {
	kind := strings.TrimPrefix(e.Err.Error(), "eventlog: ")
	switch {
	case e.Seq == 0:
		return fmt.Sprintf("%s: %s", kind, e.Reason)
	case e.Last > e.Seq:
		return fmt.Sprintf("%s at seq %d..%d: %s", kind, e.Seq, e.Last, e.Reason)
	default:
		return fmt.Sprintf("%s at seq %d: %s", kind, e.Seq, e.Reason)
	}
}

func (e *ChainError) Unwrap() error { return e.Err }

func chainErr(kind error, seq uint64, format string, args ...any) *ChainError {
	return &ChainError{Seq: seq, Reason: fmt.Sprintf(format, args...), Err: kind}
}

// errTooDeep sends a value nested deeper than the fast canonical encoder
// goes to the general one.
var errTooDeep = errors.New("nested too deep for the fast path")

// ErrReadOnly is a write to a mirror's log: it has no key to sign with.
var ErrReadOnly = errors.New("read-only mirror")

// ErrBehindPublished is a write to a log that holds its writes (Log.Hold):
// a checkpoint of its own key that its chain does not cover was seen.
var ErrBehindPublished = errors.New("behind_published")

// ErrModelsReplaced is a commit of DerivedWrites begun before a rebuild made
// another model space live: what it derived went with the old space.
var ErrModelsReplaced = errors.New("the read models were rebuilt since these derived writes began")

// errNoModels is a read of a model from a log opened without any.
var errNoModels = errors.New("the log has no read models (Options.Models)")

// ErrBadNodeProof means a node proof does not verify.
var ErrBadNodeProof = errors.New("node proof does not verify")

// ErrBeyondTree is a tree size, leaf or tile the tree does not have yet.
var ErrBeyondTree = errors.New("beyond the merkle tree")
