// Package localnode puts a node together from its data dir, for the commands
// of civnode. It has five roles.
//
// It opens the core for one-shot commands: Open (with Hooks), OpenExisting
// and OpenChain, with Keystore for the data dir's payment-account keys;
// Replay rebuilds the read models (civnode replay, a Replayed). The mapping
// of a core onto http.Options is ServerOptions, here because cmd/core must
// not import http (see its doc).
//
// It runs a node (civnode serve): Run opens a Node (OpenNode), serves it
// (Node.Serve) and closes it (Node.Close). A Config describes it:
// LoadCatalog's catalog, the registry client (DefaultRegistryURL,
// RegistryReadTimeout, RegistryReadRetries), the Witnessing, and, for a
// mirror, a MirrorSource. A node of its own opens its writable chain with
// NATS, the recorder of leaf links (peer.* events, decided by
// commands.Peers), the registry client, the checkpoint pump and the
// witnessing; a mirror opens the origin's chain read-only, NATS and a
// follower of its source. The rest is the same in both: the TCP listener
// merged with the control socket, the HTTP server, and the notices to a
// service manager through Config.Notify (READY=1 once it serves,
// STOPPING=1 once it stops; Notify sends one, sd_notify(3)). Close states the order of the stop: the oracle socket, then
// node.stopped, then the recorders, NATS and the log. node.started is
// recorded before the oracle socket opens and node.stopped after it closes,
// so every oracle event of a run falls between the two; the recorders stop
// before NATS, and NATS before the log, so nothing is published or recorded
// on a closed log. With Config.Publish (serve --publish-dir) a node of its
// own publishes its chain beside the server every interval (a publisher,
// publishing.go), in transparency.PublishTo's crash-safe order, nothing
// while the fork guard holds its writes; with witnesses it publishes only
// witnessed checkpoints and is the submitter's Ceiling.
//
// It follows another node's chain (civnode mirror, and a mirror served):
// OpenMirrorSource pins the origin's key and makes the client of the
// source; FollowMirror stores what the source serves, once or as a
// follower that waits out failures that may pass. A Follower does the same
// for serve --mirror-of and says how it goes (http.Mirror): it waits out
// every failure but evidence, on which it stops following while the node
// serves on, and keeps the origin's witnessed checkpoint for the node to
// serve (HeldWitnessedPath).
//
// It serves the oracle socket of a running node (Oracle, acting as Owner)
// and reaches it from the CLI: OpenOracle, the running node's socket or
// else the data dir itself; OpenSource does the same for the Merkle tree
// of the transparency tools.
//
// It reaches the node running on a data dir as its owner: Dial is the
// client half of the owner's channel, the control socket in the data dir,
// else TCP at --addr (HostPort), where the node must first prove on each
// connection that it holds node.key (DialProven, http.ProveNode); a process
// that cannot is never sent the owner token (ErrUnproven). An --addr that
// names no HOST:PORT is an *AddrError, which the CLI reports as a usage
// error. Reach and ProveConn are the same channel as civnode doctor asks
// for it.
package localnode
