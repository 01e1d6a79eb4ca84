// Package doctor checks what a node needs and says how to fix what is wrong:
// the data dir and its secret files (modes, owners, contents), free disk
// space, the chain from the last full verify to the tip, the read models'
// watermark and layout, a running node (health, tip, whether it takes
// control.token), the listen port, and the agent registry.
//
// [Run] makes the checks in a fixed order, one [Check] each (wallets may add
// a line per key), and returns them as a [Report] that prints as text or as
// one JSON object. A mirror's data dir (origin.vkey, no node.key) has an
// origin_key check in node_key's place, and the other checks judge it as a
// mirror (mirror.go). Only a failed check is a failure: a warning is something
// the operator should know, and a skip is a check that could not run because
// of a problem an earlier one reported.
//
// Contracts:
//   - doctor records nothing in the store: no event, audit entry or verify
//     checkpoint. It opens the event log only after a read-only look has
//     found a chain, since opening an empty store would start a new one.
//   - No key, token or credential is ever printed or logged; they are judged.
//   - While a node runs it holds the store, so doctor asks the node instead,
//     through [Options.Reach]. The owner token goes only to a node that has
//     proved it holds node.key ([Options.Prove]); the caller supplies both,
//     so the package knows the node's API only as [Node].
//   - Each network check is bounded (5 s), and the registry check, the
//     slowest when the registry does not answer, runs beside the others.
package doctor
