// Package oraclesock is the oracle's unix-socket channel: how civnode oracle
// reaches the node running on its data dir. It holds both ends, the [Server]
// the node runs ([Serve], over the node's [Service]) and the [Client] the CLI
// dials ([Dial]), the wire types ([Request], [Response], [Failure], …) and the
// one table that turns an error into an answer ([ErrorOf]). [CheckPayload] is
// the socket's rule for a feed's payload, which a caller that publishes
// without the socket applies too, so that both ways answer a bad payload
// alike.
//
// The oracle has no HTTP endpoint, so this channel is not HTTP either: the node
// listens on <data-dir>/oracle.sock, a unix socket with mode 0600 inside the
// 0700 data dir (internal/unixsock), so only the user who runs the node can
// connect, and that user could as well open node.key. Whoever connects acts as
// the node's owner, as the CLI does when it opens the data dir itself.
//
// # Bytes
//
// Newline-delimited JSON. A client writes one request per line and reads one
// response line for each, in order; a connection may carry any number of them:
//
//	{"op":"publish","args":{"as":"ada","feed":"prices.eth-usd","payload":{…},"price":5}}
//	{"result":{"feed":"prices.eth-usd","version":1,…}}
//
//	{"op":"pull","args":{"as":"bob","feed":"prices.eth-usd"}}
//	{"error":{"kind":"conflict","code":"insufficient_balance","message":"bob has 3 credits; …","field":"as"}}
//
// op is publish, subscribe, pull (args: the commands' input, as in
// commands.PublishFeedInput), balance (args {"agent": PUBLIC_ID}, optional),
// or feeds (no args). A result is exactly what civnode oracle --json prints
// for the command, except balance, which is always {"balances":[…]}. Lines are
// encoded without HTML escaping ([Marshal]): a feed's payload crosses in the
// very bytes its signature covers.
//
// A request line is decoded by the rule the HTTP API holds request bodies to
// (internal/ijson): I-JSON (valid UTF-8, no lone surrogate, no name twice),
// member names matched exactly, unknown members and trailing data refused; any
// such fault is invalid_json naming the member at fault. Every line is answered with exactly
// one of result and error.
//
// # Errors
//
// An error has kind, code, message and, for a refused field, field. Kind is
// invalid, forbidden, not_found, conflict, upstream or upstream_timeout for a
// refusal of the commands (commands.Kind); unavailable when the node cannot
// take the request now (stopping, timeout, a log that cannot accept writes);
// internal for a fault whose detail stays in the node's log. The client turns
// a refusal back into the *commands.Error the commands return, and anything
// else into a *NodeError, so both ways of working print alike.
//
// # Bounds and stop
//
// A request line is at most [RequestLimit] bytes; a longer one is answered with
// request_too_large and the connection closed. Each request has
// [RequestTimeout] to finish, each answer [WriteTimeout] to be written; a
// connection with no request for [IdleTimeout] is closed. At most [MaxConns]
// connections are served at once; more wait to be accepted. On Close the
// server takes no new connection or request, lets the requests in flight
// finish and answer, closes every connection and removes the socket file.
package oraclesock
