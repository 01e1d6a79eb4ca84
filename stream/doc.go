// Package stream runs the node's embedded NATS server and publishes on it every
// event the log commits, so that live observers (the WebSocket /v1/stream in
// package http, NATS subscribers on a --nats-listen port or behind a leaf-node
// link) follow the node without reading the store (docs/streaming.md).
//
// [Start] runs the [Server] from its [Options]; [Server.Close] stops it.
//
// # Subjects
//
// Every subject is under civnode.<node DID>; a did:key holds no '.', '*', '>'
// or space, so the DID is one subject token.
//
//	civnode.<node>.events.<type>  one message per committed event, in seq order:
//	                              data = the event JSON exactly as stored
//	                              (eventlog.Event.Raw), header Civnode-Seq =
//	                              the decimal seq
//	civnode.<node>.exports        one ExportNotice JSON per sealed export
//	civnode.<node>.checkpoints    the Merkle tree's signed checkpoint (a C2SP
//	                              signed note, docs/transparency.md) each time the
//	                              tree has grown, at most once a second
//	                              (PublishCheckpoints); header
//	                              Civnode-Tree-Size = its tree size
//	civnode.<node>.checkpoints.witnessed
//	                              each newer witnessed checkpoint: the note
//	                              with a quorum of witnesses' cosignature lines
//	                              (PublishWitnessed); header Civnode-Tree-Size
//
// [EventSubject], [ExportsSubject], [CheckpointsSubject] and
// [WitnessedSubject] spell these subjects, [HeaderSeq] and [HeaderTreeSize]
// the headers.
//
// Event types are dot-separated tokens, so the type filter of eventlog
// ("mission.*": every type that starts with "mission.", at any depth) is the
// NATS subject civnode.<node>.events.mission.> exactly.
//
// # The log stays the system of record
//
// Publish is the log's OnCommit hook. It runs on the commit path after the
// fsync, so it only hands messages to the in-process connection's buffer and
// never waits for a subscriber; a NATS error is logged and counted, never
// returned, because a NATS hiccup must not fail the log. What NATS fails to
// carry is still in the log, from which an observer replays (GET /v1/events,
// /v1/stream?after_seq=). One in-process connection publishes, in commit order,
// so every subscriber sees seq order.
//
// The in-process Subscriptions ([Server.Subscribe]; one per WebSocket client)
// share one NATS subscription on civnode.<node>.events.>, whose callback
// offers each event to every matching Subscription's bounded channel
// (subscribe.go): NATS carries an event once, however many clients follow the
// node.
//
// A Subscription cannot hold a gap: when its buffer is full as an event
// arrives, or when NATS itself drops messages on the way to the shared
// subscription, it is ended with ErrSlowConsumer instead, and its consumer
// resumes from the log after the last seq it saw.
//
// # Listeners
//
// By default the server opens no TCP port: the node publishes and subscribes
// through in-process connections (nats.InProcessServer). Options.Listen opens a
// NATS client port; Options.LeafURL solicits a leaf-node link to an existing
// NATS server or cluster, which then carries the node's subjects to its own
// subscribers. The server cannot call back when a leaf link goes up or down, so
// the package polls its leaf connections (Options.LeafPoll, default every
// second) and reports each change to Options.OnPeer. [Server.Status] and
// [Server.LeafLink] report the server and its link as they are.
//
// # Accounts and the port's limits
//
// The node's in-process connections live in a NATS account of their own that
// exports civnode.<node>.> one way to two others: the global account, which
// holds only the leaf link, and the port's account, which holds every client
// of Options.Listen. Nothing a hub sends over the link or a port client sends
// reaches the node's subscribers or the port's clients. The port is a
// read-only feed of this node: its clients may subscribe under civnode.<node>.>
// and publish nothing; the server has no $SYS account. Options.MaxConns,
// MaxSubs and MaxPending bound the port's clients (DefaultMaxConns,
// DefaultMaxSubs, DefaultMaxPending); the leaf link's subscriptions, which
// are the hub's interest, are not capped.
//
// # Authentication
//
// Every client logs in through one check (portAuth, NATS's custom client
// authentication): the node's in-process connections with a password made
// for the run, a port client with a node token as its NATS token or password,
// which Options.Authenticate takes or refuses. The open port connections'
// tokens are checked again every RevokeCheck, and a connection whose token no
// longer authenticates is closed.
package stream
