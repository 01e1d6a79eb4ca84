// Package transparency holds the tools of the node's transparency log (the
// RFC 9162 Merkle tree over the chain, and the checkpoints the node signs with
// its key; docs/transparency.md): its operator's publisher and its observers'
// monitor and prover. civnode transparency parses their flags and prints what
// they return.
//
// # Trust
//
// A checkpoint is worth only the key that signed it. Every tool opens one
// through Key.OpenCheckpoint with a verifier key it trusts ([ParseKey] requires a
// node's: Ed25519, named civnode/<did> where did is that very key's did:key),
// and never reads a size or root from an unverified note. A note the trusted
// key did not sign is ErrAnotherKey. Hashes and roots are written as [B64]
// writes them, the form of checkpoints.
//
// # Sources
//
// Publish and Prove read the tree from a Source: the event log of a stopped
// node ([LogSource], or [WitnessedLogSource] with the witnessed checkpoint its
// witness submitter kept) or a node's transparency endpoints ([APISource]).
// Check reads a Host: a node's API ([NodeHost], or [WitnessedNodeHost] for
// its witnessed checkpoint) or a static host serving what Publish wrote
// ([TilesHost]), from whose tiles it computes the consistency proof itself,
// each tile checked against the new checkpoint's root. All of them talk plain
// net/http through a Client; a Client built with [NewClient] sends only where
// its *http.Client dials (the owner's channel to the node of a data dir), one
// built with [NewObserverClient] dials any URL ([NodeURL] turns an address
// into a node's) and counts the bytes transferred.
// An observer's client follows a redirect only within the scheme, host and
// port it was given, at most three in a row (else ErrRedirect), and fails an
// answer of which no byte arrived for 30 seconds, however long the whole
// answer takes.
//
// # Publish
//
// [Publish] writes the C2SP tlog-tiles layout to a directory: CheckpointFile,
// tile/<L>/<N>[.p/<W>] hash tiles of height TileHeight ([TilePath]), and
// VerifierKeyFile; and, for mirrors, SealFile and the event bundles
// (events/, [BundlePath]; see Bundles). [PublishTo] is the same through a
// [Target]: a directory ([DirTarget]) or an S3-compatible bucket
// ([NewS3Target], s3://BUCKET/PREFIX, each path an object under the prefix
// with a static host's [ContentType]); [OpenTarget] picks one from a
// location. Every tile and bundle is durable (Target.Sync) before the seal
// and the checkpoint are written. With PublishOptions.WitnessedOnly the
// checkpoint and the seal are only of the node's newest witnessed tree,
// which may be older than the tiles (its own partial tiles and bundle are
// written with it; eventlog.Log.SealAt seals it); PublishOptions.Done lets a
// publisher that runs every interval skip what it wrote before.
// In a directory every file goes to TmpDir, is synced and renamed into place
// (internal/atomicfile); the tiles' directories are synced before the
// checkpoint is renamed, so a reader never sees a checkpoint whose tiles are
// missing, and a run cut short is simply run again. LockFile keeps two runs
// apart (flock on Linux and macOS), since an older checkpoint written last
// would look like a rollback; [LockDir] takes the same lock for whatever must
// see the directory still, as a copy to another host. It refuses a target whose checkpoint is
// another key's, of a larger tree, or of a tree the node's does not extend
// (ErrPublishRefused).
// The checkpoint it writes is the node's witnessed one (Source.Witnessed, with
// the witnesses' cosignatures) when that is of the very tree published, so an
// observer requiring witnesses can read the static copy too; else the plain
// one. [Behind] tells how many events of what was published a chain lacks,
// as a restore checks.
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
// [Mirror] makes a mirror's log (a log opened with the origin's public key,
// which checks and never signs) hold the origin's chain as a source serves
// it: a published directory (checkpoint, seal, tile/, events/) or a node's
// API (its /v1/transparency/ routes; [MirrorOptions].API). It trusts the
// origin's key alone, pinned on the first run ([MirrorKey]: the key given, or
// the one the source serves, trusted on first use). One run:
//
//   - reads the source's seal and verifies it: its bundle_signature over the
//     chain's root and tip, and its checkpoint, both by the origin's key
//     (another signer is ErrAnotherKey, anything else ErrBadSeal); with
//     MirrorOptions.Witnesses, the source's checkpoint must also be of the
//     seal's tree and cosigned by a quorum of them (ErrNotWitnessed);
//   - holds the seal's tree to the one the mirror stored: a smaller tree is
//     ErrRolledBack, the same size with another root or a larger tree that
//     the source's tiles do not prove consistent with it is ErrForked;
//   - reads the bundles after the mirror's tip (see Bundles), checks each
//     event against the tree's leaf at its place, then the signatures of a
//     group of events on every core, and stores the group (one fsync), each
//     event's id, signature and prev_hash checked by the log as it stores
//     it; reading, checking and storing overlap, and at most three groups are
//     in flight, so a catch-up's memory is bounded;
//   - stores the seal last, once the log holds the whole chain it covers.
//
// So a run cut short, by kill -9 too, is simply run again: it resumes from
// the log's tip, once it has checked that the events stored beyond the last
// stored seal are those of the new tree (else ErrForked, or ErrRolledBack
// when the source's tree is smaller than what the mirror holds). Nothing
// that fails a check is stored: what the source served goes to a new
// evidence file (MirrorOptions.Evidence, as Check's), and the run reports the
// problem in [Mirrored].Result and its error. A failure to reach the source
// is returned as it is, without evidence.
//
// With MirrorOptions.Witnesses, a tree not cosigned by the quorum yet is
// ErrNotWitnessed, without evidence: it proves nothing against the origin,
// and is asked about only once the seal passed the rollback and fork checks.
// After a run the source's cosigned checkpoint of a tree the mirror holds is
// in [Mirrored].Witnessed, for the mirror to serve as the origin does
// ([WriteHeldWitnessed] keeps it); without Witnesses its cosignatures are
// carried unchecked, the origin's signature and root always checked.
//
// A follower (civnode mirror, serve --mirror-of;
// cmd/civnode/internal/localnode) runs Mirror again every interval. [Transient] tells the
// failures a follower waits out (a connection refused or reset, a timeout, a
// 5xx or 429, a tree not cosigned yet) from those that stop it; [Evidence]
// tells the problems with what was served, on which a follower stops
// following; and [RetryDelay] paces the attempts after one, with jitter, at most
// [MaxRetryDelay] (or the interval when that is longer).
//
// # Bundles
//
// An event bundle holds the events of one level-0 tile's leaves: bundle N
// holds leaves BundleSize·N … BundleSize·N+W−1, that is seqs one more, W =
// [BundleSize] (256) for a full bundle and fewer for the partial one at the
// tree's edge. Its path is [BundlePath]: events/<N>[.p/<W>], N in the index
// scheme of tiles (events/x001/234, events/000.p/1). Publish writes it under
// the publish directory, and a node serves the same bytes at GET
// /v1/transparency/events/<N>[.p/<W>] (application/x-ndjson; immutable, as
// its path names its content).
//
// Its bytes are the events exactly as the log stores them, id and signature
// included, one a line, in seq order, each line ending in a newline; nothing
// else. A line is at most eventlog.MaxEventSize bytes, so a bundle is
// at most BundleSize such lines.
//
// Mirror never holds a bundle whole: it reads one a line at a time, and
// refuses as ErrBadEvent, with the line as evidence, a line over
// eventlog.MaxEventSize, a line that is not an event, an event whose seq is
// not its line's place or whose id's leaf hash (RFC 9162, of the 32 bytes of
// the id) is not the signed tree's leaf there, fewer lines than W, and any
// byte after the W-th line. The tree's leaves come from the source's tiles,
// each checked against the root of the verified checkpoint, so a bundle is
// trusted only as far as the origin's signature reaches. Ids, signatures and
// the chain's links are then checked as the events are stored.
//
// # Prove
//
// [Prove] assembles the proof that one event is in a signed tree, checks the
// checkpoint, the event's id (SHA-256 of its RFC 8785 signed bytes) and
// signature, and the inclusion path, and returns it as a Proof whose Marshal
// keeps the event in the very bytes the node signed. [ProveWitnessed] proves
// it in the tree of the node's witnessed checkpoint, which the proof carries
// with its cosignatures.
//
// # State proofs
//
// [VerifyStateProof] checks an answer of GET /v1/state/proof offline
// (civnode state verify; docs/state-proofs.md): the record against the state
// root ([statemap.Verify] over its RFC 8785 form), the state.committed event
// that signs the root (Proof.Verify: its id, its signature by the trusted
// key, its inclusion in a checkpoint of that key), the witnesses'
// cosignatures when required, and that the event's payload is the answer's
// root, entries and through_seq. [FetchStateProof] asks a node for one.
package transparency
