// Package eventlog is civnode's system of record: an append-only, hash-chained,
// Ed25519-signed event log stored in Pebble, plus the unchained audit log.
//
// # Event bytes
//
// Every event has the fields type, timestamp, prev_hash, payload, seq and node_did,
// plus id and signature. The signed bytes U are the RFC 8785 (JCS) serialisation of
// the event without id and signature; because JCS sorts keys, U always reads
//
//	{"node_did":…,"payload":<JCS of payload>,"prev_hash":…,"seq":N,"timestamp":…,"type":…}
//
// id = lowercase hex(SHA-256(U)) and signature = standard padded base64 of
// Ed25519(node key, U). The genesis event (seq 1, type node.genesis) has a prev_hash
// of 64 zeros; every later prev_hash is the id of the event before it. Timestamps are
// UTC RFC 3339 with exactly six fractional digits and strictly increase along the
// chain: when the clock stalls or steps back the log uses the previous value + 1µs.
// The id does not cover the signature, so the chain is computed sequentially while
// signatures are computed in parallel.
//
// Payloads are canonicalised by jcs.go, a single-pass encoder held byte-for-byte
// equal to gowebpki/jcs by FuzzCanonicalJSON.
//
// The stored and served form of an event is U with two keys appended before the
// closing brace: `,"id":"<hex>","signature":"<base64>"}`. U is therefore recovered
// from a stored event by cutting that fixed-length suffix, and serving an event is a
// copy of its stored bytes.
//
// # Key layout
//
// One Pebble database; the first byte of a key names its space and every integer is
// big-endian, so iteration order is numeric order.
//
//	0x00 <name>                      meta: "schema" (the layout version, "2"),
//	                                 "models" (which model space is live),
//	                                 "verified" (where the last full Verify
//	                                 ended, {"seq","id","verified_at"} as JSON;
//	                                 verifiedmark.go), "tree" (the events the
//	                                 Merkle tree covers, u64; tree.go) and, on
//	                                 a mirror, "seal" (the origin's newest
//	                                 seal, JSON; mirror.go)
//	0x01 <seq u64>                   event, stored form above
//	0x02                             retired: schema 1's id → seq index,
//	                                 deleted when Open moves a store to
//	                                 schema 2 (schema.go)
//	0x03 <type> 0x00 <seq u64>       ordinal u64 of this event among events of its type
//	0x04 <timestamp µs u64>          seq u64 (timestamps are unique, so this is a seek
//	                                 target for since=)
//	0x05 <timestamp µs u64>          audit entry JSON (not chained)
//	0x06 <kind> 0x00 <id>            administrative record, e.g. a hashed token
//	                                 (not chained; see records.go)
//	0x07 <key>, 0x08 <key>           the read models' two spaces, one live (see
//	                                 below); the models choose their keys, and
//	                                 keys under 0x00 hold the space's "version"
//	                                 and "applied" (the last seq folded), keys
//	                                 under 0x01 derived state (derived.go)
//	0x09 <stored index u64>          a chunk of the Merkle tree over the event
//	                                 ids: the stored hashes (32 bytes each, tlog's
//	                                 numbering) of up to 128 consecutive events of
//	                                 one batch, keyed by the index of the first
//	                                 (tree.go, docs/transparency.md)
//
// The type index stores each event's ordinal within its type, so a query's total is a
// subtraction, not a count. All keys of one group of appends are written in one Pebble
// batch and made durable by one fsync (group commit); Append returns only after it.
//
// # Writes
//
// An append passes through four kinds of goroutine, each keeping one rule:
//
//   - The caller of Append canonicalises its drafts and sends a request on
//     reqs, then waits for it; once sent, a request is decided and committed
//     whatever the caller does, so it never reports a failure that did not
//     happen.
//   - The sequencer (runSequencer, append.go), the one serial step, takes
//     requests in arrival order, runs Decide's function, chains each event
//     (seq, timestamp, prev_hash, id), extends the Merkle tree and folds the
//     read models, and sends each event on jobs to the signing workers. Its
//     rule: every event is chained and folded after every event before it,
//     and a request's events all go into one group, so a decision sees every
//     decision before its own. It sends a group on groups whenever the
//     committer is ready for one; until then, requests join that group, so it
//     grows with the load, up to maxGroup events.
//   - The signing workers (signer, append.go), one per core, sign the events
//     they are handed, with those already queued behind them, and count them
//     off the group's WaitGroup. Their rule: a signature is ed25519.Sign's,
//     byte for byte (batchsign.go).
//   - The committer (runCommitter, commit.go) waits for a group's signatures,
//     applies its one Pebble batch without waiting for the fsync, and sends
//     it on toSync; the syncer (runSyncer) waits for that fsync, makes the
//     group the tip, publishes the models' durable snapshot and releases the
//     group's callers. Their rule: groups are applied, synced and released in
//     the sequencer's order, and nothing counts as durable, nor is any caller
//     answered, before its fsync. A failed write or fsync fails the log for
//     good.
//
// # Read models
//
// A log opened with Options.Models folds every event into the read models on
// the sequencer, as soon as the event has its place in the chain, through a
// ModelTxn. The fold's writes go to an in-memory overlay, which is what
// ModelLatest reads (commands deciding inside Decide see every decision before
// theirs), and are committed in the Pebble batch of the event's group with the
// space's "applied" watermark, under the same fsync. A ModelView, a Pebble
// snapshot, reads only what is durable: Pebble shows a batch to readers before
// its fsync ends, so the views share a snapshot the committer takes when it
// has applied a group, before the next, and publishes after the group's fsync
// (durablesnap.go, commit.go). Because events and models share one
// batch, a crash can tear neither from the other; Open finds the watermark at
// the tip and folds nothing.
//
// Open folds the tail when the watermark is behind the tip (a log that was
// written without Options.Models) and rebuilds when the stored version differs
// from Folder.Version: it folds the chain into the other space in batches, each
// recording its own watermark so an interrupted rebuild resumes, then makes
// that space live and deletes the old one in one batch. RebuildModels does the
// same on demand and reports how the old models differed (civnode replay). A
// failed fold or commit fails the log, like a failed fsync.
//
// State derived from the models off the write path (the state tree over the
// records) is written beside them with DerivedWrites, under keys no fold may
// write: a ModelView shows it with the records it was derived from, a
// rebuild drops it for its owner to derive again, and the rebuild's
// comparison leaves it out.
//
// # A damaged store
//
// Pebble checksums every block; the log takes Pebble's corruption reports
// itself (corrupt.go), so damage is an error, never a panic. A read that meets
// a damaged block returns ErrCorrupt naming the file and, for events, the seqs
// it could not read, and fails the log as a failed fsync does. Open checks the
// genesis event against the key (ErrWrongKey) and the newest events; a crash
// cannot tear an event from its group (each group is one atomic batch), so any
// fault there is ErrCorrupt too. CheckStore reads everything Verify does not.
//
// A crash can cut the newest write-ahead-log record short: the group whose
// fsync never completed, so no event of it was acknowledged. Before Pebble
// replays the log, Open reads the newest WAL itself (torn.go): a file that
// ends inside its last record is a torn tail, reported (Log.TornTail, a
// warning naming the recovered seq) and recovered from; a bad record followed
// by good ones is damage, ErrCorrupt. Pebble alone would drop both silently.
//
// # Export bundle
//
// A bundle is the full chain framed as docs/wire-formats.md describes; bundle_signature is
// Ed25519 over the JCS of {"chain_root_hash","chain_tip_hash","generated_at"}.
// WriteBundle streams it and VerifyBundle checks one in constant memory.
//
// # A mirror's log
//
// Opened with Options.PublicKey and no Key, a log holds another node's chain
// and never signs (mirror.go): Append, Decide and SignNodeProof answer
// ErrReadOnly, Ingest adds the origin's events, each checked against its key,
// and StoreSeal keeps the origin's Seal (bundle_signature and checkpoint of
// one event_count) once the log holds that chain. Its checkpoint and its
// exports are the origin's, byte for byte, so they verify as the origin's.
//
// # Node proof
//
// SignNodeProof signs, for a client about to trust the node with a token,
// "civnode-node-proof-v1\n" + node_did + "\n" + addr + "\n" + hex(nonce) with a
// 32-byte nonce (nodeproof.go). Nothing else the node key signs starts that way.
//
// # Entry points
//
//   - The log: Open (Options), then Log's Append, Audit, Query, Scan,
//     WriteBundle, ImportBundle, ImportChain, Backup and Close; Tip, TreeHead and
//     TreeCheckpoint say where it stands, ProveInclusion and
//     ProveConsistency prove it, and Verify and CheckStore check it. OpenCheckpoint,
//     CheckpointText and CheckTreeSize read and bound its signed checkpoints.
//   - Identity: DIDKey and PublicKeyFromDID map a node key to its did:key and
//     back; ChainNodeDID reads a store's node DID without opening it;
//     SignNodeProof, NodeProofBytes and VerifyNodeProof make and check a node
//     proof.
//   - Bytes: CanonicalObject and AppendCanonicalString write RFC 8785 JSON;
//     ValidType and ValidTypeFilter check event types and their filters;
//     PrefixEnd bounds a key prefix for the read models' iterators.
//   - The machine: SyncWriteLatency times one synced Pebble write in a
//     directory, the limit benchmarks state the write path against.
package eventlog
