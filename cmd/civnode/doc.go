// Command civnode runs a civnode node and works on its signed event chain:
// serve, verify, export, replay, doctor, backup, restore, import, token,
// wallet, oracle, transparency (publish, check, prove), bench, registry-dev,
// version and man. civnode --help and the README's table of commands give
// each with its flags; scripts and tests rely on that command line.
//
// # Layout
//
// This package parses flags (and serve's CIVNODE_* variables and --config
// file), runs one command and prints what it returns. Each command is a
// small type or constructor of its own, in a file named for it; [Main] holds
// only what every command shares: the streams and environment, the logger,
// the progress bars and the "invalid:" line. main is a few lines:
// [NewMain] gives the process's Main, [Main.Run] runs the command line, and
// [ExitCode] turns the result into the exit status; the end-to-end tests build
// a Main of their own and run the same Run. What a command does lives in
// the package that owns it:
//
//	internal/localnode   open the core; serve a node (its wiring and
//	                     shutdown order); reach a running node (node
//	                     channel, oracle socket, tree); replay
//	internal/admin       tokens, payment accounts and backup snapshots,
//	                     offline or through the running node's admin API
//	internal/backup      backup, restore and the check of a restored dir
//	internal/datadir     the data dir: layout, secret files, key, lock
//	internal/doctor, internal/bench, internal/configfile, internal/buildinfo
//	oraclesock, transparency, http (client half of the node proof)
//
// # Data dir
//
// --data-dir defaults to $CIVNODE_DATA_DIR, else ~/.civnode. Its files (node.key,
// control.token, db/, control.sock, oracle.sock, wallets/, registry.credential),
// their modes and how secrets are written are package internal/datadir's.
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
// never sent the token. See localnode.Dial and docs/tokens.md.
//
// oracle works while the node runs too, but never over HTTP: the oracle has no
// HTTP endpoint (docs/oracle.md). It first tries oracle.sock, and when a node
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
