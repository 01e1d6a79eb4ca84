// Package witness holds both sides of witnessed checkpoints (C2SP
// tlog-witness and tlog-cosignature; docs/transparency.md): the node as a log,
// which submits its checkpoints to witnesses and keeps their cosignatures
// (Submitter), and the node as a witness, which cosigns the checkpoints of the
// logs it is told to witness (Witness). Both speak the C2SP formats only, so
// either side works with the ecosystem's own implementations (transparency-dev's
// omniwitness, for one).
//
// # Cosignatures
//
// A cosignature/v1 is a signed-note signature line by an Ed25519 key of note
// type 0x04 over "cosignature/v1\ntime <t>\n" and the checkpoint body, where
// the signature bytes are the key hash, t as a big-endian uint64 and the
// Ed25519 signature. They are made and checked by
// github.com/transparency-dev/formats/note, the ecosystem's implementation:
// NewCosignatureSigner is its signer of a witness key, with the key's
// CosignatureVerifierKey beside it, and NewCosignatureVerifier its verifier of
// a witness's key, refusing any key but an Ed25519 cosignature/v1 key whose
// hash is its own. Both are note.Signer and note.Verifier, so
// golang.org/x/mod/sumdb/note opens a note that carries both the log's
// signature and its cosignatures; CosignatureTime reads a verified
// cosignature's time. Tests that need a witness with a wrong clock sign with
// witnesstest.DatedCosigner (Options.Cosigner), which writes the spec's bytes
// apart from formats.
//
// # The witness
//
// A Witness keeps, per log origin, the size and root it last cosigned in one
// state file, replaced atomically and synced before any answer: a cosignature
// given is never forgotten by a restart, kill -9 included, so the witness never
// cosigns a smaller tree or one inconsistent with a tree it cosigned before.
// Requests of one witness are serialized. Its key is derived from the node
// key (DeriveKey) and never stored.
//
// # The submitter
//
// A Submitter runs one loop per witness, apart from the log's appends: at most
// once per interval it sends the newest checkpoint with the consistency proof
// from the size the witness holds (learning that size from a 409), backs off
// on failure, and records each cosignature in a state file beside the tree
// (not in the chain: an event would grow the tree it attests). The newest
// checkpoint with a quorum of cosignatures is the witnessed checkpoint; every
// valid cosignature of it that arrives later is merged into it, so an observer
// that trusts any one of its cosigners can check it. A cosignature dated
// further than CosignatureWindow from the node's clock (ErrCosignatureTime),
// a redirect to another scheme, host or port (ErrRedirect) and a 409 naming a
// size beyond the tree (ErrHeldSize) are that witness failing, retried after
// the back-off like any failure.
//
// # Entry points
//
// New makes a Witness (Options): AddCheckpoint cosigns a request's body,
// Logs and Name say what it witnesses and as whom. NewSubmitter runs the
// loops (SubmitterOptions) towards each Remote, which ParseRemote reads from
// serve's --witness VKEY@URL. DeriveKey and Name give the node's witness key and name from its
// node key; NewCosignatureSigner, NewCosignatureVerifier,
// CosignatureVerifierKey and CosignatureTime make and read cosignatures.
package witness
