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

// ErrForked is a node that signed two trees that do not extend one
// another: one of the problems Check reports, with ErrRolledBack and
// ErrAnotherKey.
var ErrForked = errors.New("the log forked")

// ErrRolledBack is a node whose tree is smaller than one it signed before.
var ErrRolledBack = errors.New("the log rolled back")

// ErrAnotherKey is a checkpoint that the trusted key did not sign: a note
// whose signatures are all by other keys, or a verifier key that is not the
// one trusted.
var ErrAnotherKey = errors.New("signed by another key")

// ErrBadEvent is an event of a bundle that is not the one the signed
// tree holds at its place, or that does not verify.
var ErrBadEvent = errors.New("an event does not verify")

// ErrBadSeal is a seal whose signature or checkpoint does not verify.
var ErrBadSeal = errors.New("the seal does not verify")

// ErrCurrentCheckpointOnly: a node signs checkpoints over its API for its
// current tree only, so that a token cannot make it sign at will.
var ErrCurrentCheckpointOnly = errors.New("the node's API serves the checkpoint of its current tree only")

// ErrNotWitnessed is a checkpoint without the quorum of valid, fresh
// cosignatures the observer requires (CheckOptions.Witnesses).
var ErrNotWitnessed = errors.New("not witnessed")

// errBadTiles is a static host whose tiles are not those of its own
// checkpoint: a broken or half-copied mirror, which proves nothing either way.
var errBadTiles = errors.New("its tiles do not match its checkpoint")

// ErrPublishRefused is a publish target that holds what the node's tree
// does not extend (a larger tree, another root, another key's checkpoint):
// publishing would roll the published log back or fork it, so nothing is
// written, and a node publishing continuously stops publishing.
var ErrPublishRefused = errors.New("the publish target refuses the node's tree")

// ErrBadStateProof is an answer of GET /v1/state/proof that does not verify
// (VerifyStateProof): malformed, a record that is not under its root, a
// commitment not signed or not in the checkpoint, a payload that is not the
// answer's root.
var ErrBadStateProof = errors.New("the state proof does not verify")
