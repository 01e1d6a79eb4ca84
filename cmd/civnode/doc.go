// Command civnode runs a civnode node and works on its signed event chain.
//
//	civnode serve   [--data-dir DIR] [--addr HOST:PORT] [--governs a,b] [--catalog FILE]
//	                [--page-bytes N] [--rate-limit N] [--rate-burst N] [--max-conns N]
//	                [--max-conns-per-addr N] [--model-cache BYTES]
//	civnode verify  FILE|-            an export bundle (- reads stdin)
//	civnode verify  --data-dir DIR    the local chain
//	civnode export  [--data-dir DIR]  a signed export bundle to stdout
//	civnode replay  [--data-dir DIR]  verify the chain, rebuild the read models from
//	                                  it and report how the kept ones differed
//	civnode doctor  [--data-dir DIR] [--addr HOST:PORT] [--registry-url URL] [--json]
//	                                  check files, chain, port and registry; say
//	                                  how to fix what fails (docs/doctor.md)
//	civnode transparency publish --dir DIR
//	                                  the Merkle tree's tiles and checkpoint, for a
//	                                  static host (docs/transparency.md)
//	civnode transparency check (--addr URL | --tiles URL) --state FILE
//	                                  exit 1 when the log forked, rolled back or is
//	                                  signed by another key
//	civnode transparency prove SEQ    an inclusion proof to check offline
//	civnode bench   [--events N] [--node URL] [--json] [--hostile]
//	                                  load a node over HTTP; figures beside the
//	                                  machine's limits (docs/benchmarks.md)
//	civnode token create (--acts-for PUBLIC_ID | --observer)
//	                                  issue an agent or observer token
//	civnode token rotate TOKEN_ID     give a token a new secret
//	civnode token revoke TOKEN_ID     refuse a token from now on
//	civnode token list                every token, never a secret
//	civnode oracle publish FEED --as PUBLIC_ID --payload JSON|@FILE|- --price N
//	civnode oracle subscribe FEED --as PUBLIC_ID --max-price N
//	civnode oracle pull FEED --as PUBLIC_ID
//	                                  the payload alone on stdout
//	civnode oracle balance [--agent PUBLIC_ID]
//	civnode oracle feeds
//	civnode version
//
// The token commands take [--data-dir DIR] [--addr HOST:PORT] (default
// 127.0.0.1:7777); create and rotate print the secret, and nothing else, on stdout.
// The oracle commands take [--data-dir DIR] [--json]; --json prints one JSON
// object per command, a failure as {"error":{"kind","code","message","field"}}
// (docs/oracle.md).
//
// The command line is the README's table of commands; scripts and tests rely
// on it.
//
// # Data dir
//
// --data-dir defaults to $CIVNODE_DATA_DIR, else ~/.civnode. serve creates it with
// mode 0700 and, on first start, two secrets with mode 0600:
//
//	node.key       the node's Ed25519 private key, PKCS#8 PEM ("PRIVATE KEY")
//	control.token  the owner bearer token: 32 random bytes as hex, then "\n"
//	db/            the Pebble database of the event log (package eventlog)
//	control.sock   while serve runs: a unix socket (0600) serving the API, the
//	               CLI's way to the running node (http.Client); a stale one is
//	               replaced at start, a clean stop removes it
//	oracle.sock    while serve runs: a unix socket (0600) serving civnode oracle
//	               in newline-delimited JSON, not HTTP (package oraclesock); stale
//	               and clean-stop handling as for control.sock
//	wallets/       payment accounts' keys, one REF.key (0600) per civnode wallet
//	               create; the directory is 0700
//	registry.credential  optional, put there by the operator: the node's bearer
//	               credential for the agent registry (registry.go)
//
// Secrets are written to a temporary file and linked into place, so a crash never
// leaves a half-written key and two first starts cannot both create one. A key or
// token file that is readable by group or others is used anyway, with a warning on
// stderr: refusing to start would turn a permission slip into an outage, and the
// operator is told how to fix it. Neither secret is ever logged.
//
// # Exclusive access
//
// The running node holds the database's lock. verify --data-dir, export and replay
// open the database themselves, so they fail with a clear message while a node
// runs on the same dir; verify the node's HTTP export instead.
//
// token and wallet are the commands that work while the node runs: when the data
// dir is in use they call the node's admin endpoints (/v1/admin/tokens,
// /v1/admin/payment-accounts) with the owner
// token from control.token, so the change takes effect in the running node at
// once; otherwise it opens the data dir itself. It reaches the node through
// control.sock, or else over TCP at --addr once the node there has signed a fresh
// nonce with node.key (POST /v1/node/proof): a process that merely holds --addr is
// never sent the token. See nodechannel.go and docs/tokens.md.
//
// oracle works while the node runs too, but never over HTTP: the oracle has no
// HTTP endpoint (wire.md §10). It first tries oracle.sock, and when a node
// answers there, the node runs the command on its own core; only when none
// answers does oracle open the data dir itself, so it never opens the database
// beside a running node. A node that holds the data dir without answering on
// oracle.sock is an error that names the socket. Both ways run the same
// commands and append the same events.
//
// # Exit codes
//
// 0 success; 1 failure, including a chain or bundle that does not verify (the
// "invalid:" line on stdout names the first bad seq), a damaged store (the
// line names the seqs that cannot be read and the file; docs/verifying.md) and
// an oracle action the commands refused (insufficient_balance,
// price_above_max, a signature that does not verify …; nothing is recorded);
// 2 a usage error. A Go panic is a bug, never an answer to what is on disk.
//
// # Output
//
// Results go to stdout, logs (log/slog text, --log-level) to stderr. Progress bars
// for verify, export and replay are drawn on stderr only when it is a terminal.
package main
