// Package datadir owns a node's data directory: where each file lives, how a
// secret is written and read, the node key, the owner's control token, and
// telling a database another process holds from one that is damaged.
//
// # Layout
//
// --data-dir defaults to $CIVNODE_DATA_DIR, else ~/.civnode ([Resolve]).
// civnode serve creates it with mode 0700 ([Dir.Create]) and, on first start,
// two secrets with mode 0600:
//
//	node.key       the node's Ed25519 private key, PKCS#8 PEM ("PRIVATE KEY")
//	control.token  the owner bearer token: 32 random bytes as hex, then "\n"
//	db/            the Pebble database of the event log (package eventlog)
//	control.sock   while serve runs: a unix socket (0600) serving the API, the
//	               CLI's way to the running node; a stale one is replaced at
//	               start, a clean stop removes it
//	oracle.sock    while serve runs: a unix socket (0600) serving civnode oracle
//	               in newline-delimited JSON, not HTTP; stale and clean-stop
//	               handling as for control.sock
//	wallets/       payment accounts' keys, one REF.key (0600) per civnode wallet
//	               create; the directory is 0700
//	registry.credential  optional, put there by the operator: the node's bearer
//	               credential for the agent registry
//	witness.json   once the node cosigned a checkpoint as a witness (serve
//	               --witness-for): per log, the tree it last cosigned; replaced
//	               atomically and synced before each cosignature is answered
//	cosignatures.json  once a witness cosigned (serve --witness): the
//	               cosignatures gathered and the witnessed checkpoint
//	instance       the instance id: 32 random hex digits, made on first start
//	               ([Dir.InstanceID]), new when civnode promote makes the dir,
//	               the chain's promoted one after civnode import ([Dir.AdoptInstanceID])
//	recovered      while a data dir made by restore, import or promote has not
//	               yet been found up to date: how it was made ([Dir.MarkRecovered])
//
// A mirror's data dir (civnode mirror, serve --mirror-of) has no node.key: a
// mirror never signs. It has instead
//
//	origin.vkey    the origin's note verifier key, pinned on the first run
//	mirror.evidence-<UTC time>-<problem>.json  what a source served that
//	               failed verification, one new file per problem (0600)
//
// besides db/, control.token and, while serve runs, the sockets.
// [Dir.IsMirror] tells such a dir; [Dir.ExistingChainKey] and
// [Dir.OpenChainLog] open the chain of a node's dir or a mirror's, with the
// pinned origin key in a mirror's ([Dir.PinnedOrigin]), for the one-shot
// commands (backup, restore, verify, replay, export), and [ChainKey] says
// which key opens it. [BackupFiles] names origin.vkey beside node.key.
//
// # Secrets
//
// [LoadOrCreateNodeKey] and [LoadOrCreateControlToken] read the two secrets,
// creating them on first start; [LoadNodeKey] and [LoadControlToken] only
// read them, and [WriteNodeKey] puts an imported key in place (civnode
// import), never over one.
//
// Secrets are written with internal/atomicfile's Create: to a temporary file
// of mode 0600, synced, then linked into place. A crash never leaves a
// half-written key, and of two first starts exactly one creates it; the other
// reads the winner's. A key or token file that is readable by group or others
// is used anyway, with a warning that names the file but never its content
// ([ReadSecret]): refusing to start would turn a permission slip into an
// outage, and the operator is told how to fix it. Neither secret is ever
// logged.
//
// A missing node.key beside an existing chain is refused, naming the chain's
// DID ([Dir.RefuseLostKey]): a new key cannot continue a chain that another
// key signed, so nothing is created and the lost key must be restored.
//
// # Exclusive access
//
// The running node holds the database's lock. Anything else that opens the
// database gets [ErrInUse] while a node runs ([IsLockHeld] tells the lock from
// a file that cannot be opened at all).
package datadir
