// Package bench is the load harness behind civnode bench: it measures a node
// over loopback HTTP and WebSocket and reads each figure beside this
// machine's own limit measured in the same run.
//
// [Run] first measures the reference limits on an idle process (Ed25519 sign
// and verify rates, one synced Pebble write, a bare net/http server), then
// appends to a fresh log in process, starts a node from [Config.Binary] on a
// temporary data dir (or loads [Config.Node]), fills it, and runs the timed
// phases: creates, verify and restart, readers of GET /v1/events, WebSocket
// stream delivery and, with [Config.Hostile], full-page readers beside
// clients that never read. It samples the node's RSS from /proc. With
// [Config.Peers] naming etcd, rounds of the node's 64-client creates
// alternate with etcd's Put over gRPC, measured by the separate module in
// bench/peers/etcdput, which Run builds with the go tool and runs as a
// subprocess; without the go tool or etcd's modules the rows are skipped.
//
// The figures are measurements, not properties: bench reports every one and
// asserts none. [Results] prints them as one JSON object of numbers
// ([Results.WriteJSON], keys in report order, three decimals) or as a table
// beside their limits, ratios and targets ([Results.WriteTable]).
//
// Everything bench creates lives under one temporary directory, removed when
// Run returns; a node it started is stopped, with SIGTERM and then SIGKILL on
// an error path.
package bench
