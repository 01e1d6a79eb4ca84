// Package transparency holds the tools of the node's transparency log (the
// RFC 9162 Merkle tree over the chain, and the checkpoints the node signs with
// its key; docs/transparency.md): its operator's publisher and its observers'
// monitor and prover. civnode transparency parses their flags and prints what
// they return.
//
// # Trust
//
// A checkpoint is worth only the key that signed it. Every tool opens one
// through Key.OpenCheckpoint with a verifier key it trusts (ParseKey requires a
// node's: Ed25519, named civnode/<did> where did is that very key's did:key),
// and never reads a size or root from an unverified note. A note the trusted
// key did not sign is ErrAnotherKey.
//
// # Sources
//
// Publish and Prove read the tree from a Source: the event log of a stopped
// node (LogSource) or a node's transparency endpoints (APISource). Check reads
// a Host: a node's API (NodeHost) or a static host serving what Publish wrote
// (TilesHost), from whose tiles it computes the consistency proof itself,
// each tile checked against the new checkpoint's root. All of them talk plain
// net/http through a Client; a Client built with NewClient sends only where
// its *http.Client dials (the owner's channel to the node of a data dir), one
// built with NewObserverClient dials any URL and counts the bytes transferred.
// An observer's client follows a redirect only within the scheme, host and
// port it was given, at most three in a row (else ErrRedirect), and fails an
// answer of which no byte arrived for 30 seconds, however long the whole
// answer takes.
//
// # Publish
//
// Publish writes the C2SP tlog-tiles layout to a directory: CheckpointFile,
// tile/<L>/<N>[.p/<W>] hash tiles of height TileHeight, and VerifierKeyFile.
// Every file goes to TmpDir, is synced and renamed into place
// (internal/atomicfile); the tiles' directories are synced before the
// checkpoint is renamed, so a reader never sees a checkpoint whose tiles are
// missing, and a run cut short is simply run again. LockFile keeps two runs
// apart (flock on Linux and macOS), since an older checkpoint written last
// would look like a rollback. It refuses a directory whose checkpoint is
// another key's, of a larger tree, or of a tree the node's does not extend.
// The checkpoint it writes is the node's witnessed one (Source.Witnessed, with
// the witnesses' cosignatures) when that is of the very tree published, so an
// observer requiring witnesses can read the static copy too; else the plain
// one.
//
// # Check
//
// Check is a monitor: the first run trusts the key (or the one given) and
// stores it with the verified checkpoint in a state file (mode 0600, replaced
// atomically); each later run fetches the new checkpoint and one consistency
// proof from the stored tree, a few kilobytes whatever the log's size. A
// smaller tree is ErrRolledBack; the same size with another root, or a larger
// tree that does not extend the stored one, is ErrForked; another signer is
// ErrAnotherKey. On a problem the stored state is kept and what was served is
// written beside it, STATE.evidence-<UTC time>-<problem>.json, mode 0600, in a
// new file that nothing later replaces: two checkpoints of one key that
// disagree are proof of the fork for anyone.
//
// # Mirror
//
// Mirror catches a mirror's log up with an origin's published directory or
// API: it reads each event bundle a line at a time, every line at most
// eventlog.MaxEventSize, and stores the events in groups of bounded size, so
// its memory does not grow with the bundles. A problem with what was served
// is kept as evidence and returned; a failure to reach the source is returned
// as it is. Transient tells the failures a follower waits out (a connection
// refused or reset, a timeout, a 5xx or 429) from those that stop it, and
// RetryDelay paces its attempts.
//
// # Prove
//
// Prove assembles the proof that one event is in a signed tree, checks the
// checkpoint, the event's id (SHA-256 of its RFC 8785 signed bytes) and
// signature, and the inclusion path, and returns it as a Proof whose Marshal
// keeps the event in the very bytes the node signed.
package transparency
