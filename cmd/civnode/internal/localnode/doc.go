// Package localnode puts a node together from its data dir, for the commands of
// civnode: it opens the core for one-shot commands (Open, OpenExisting,
// OpenChain), runs a node (Serve), and reaches the node running on a data dir
// as its owner (Dial for the HTTP API, OpenOracle for the oracle).
//
// Serve is the composition of a running node: the data dir and its secrets
// made on first start, the embedded NATS server, the registry client, the
// core, the recorder of leaf links (peer.* events, decided by
// commands.Peers), the checkpoint pump, the TCP listener merged with the
// control socket, the oracle socket and the HTTP server. Its contract is the
// order: node.started is recorded before the oracle socket opens and
// node.stopped after it closes, so every oracle event of a run falls between
// the two; the recorders stop before NATS, and NATS before the log, so
// nothing is published or recorded on a closed log.
//
// Dial is the client half of the owner's channel: the control socket in the
// data dir, else TCP at --addr, where the node must first prove on each
// connection that it holds node.key (http.ProveNode); a process that cannot
// is never sent the owner token (ErrUnproven). An --addr that names no
// HOST:PORT is an *AddrError, which the CLI reports as a usage error.
//
// The mapping of a core onto http.Options is ServerOptions, here because
// cmd/core must not import http (see its doc).
package localnode
