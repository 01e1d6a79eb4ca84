// Package commands is civnode's write side: one file per command (missions,
// identities, the game, tokens, payment accounts, the registry proxy and its
// payments, the oracle). A command validates its input, reads current state
// through small interfaces it declares, checks the rules and decides events,
// which it appends through eventlog.Log.Decide, so that every decision sees the
// ones before it. Peers, the record of the node's NATS leaf links, appends
// without a decision: its events say what the node observed, and no state
// refuses one. Nothing else in civnode appends to a node's chain (bench
// measures the bare log on a scratch one).
//
// The rules that are game content rather than code — which factions, roles and
// strategies exist, which missions the game publishes — come from the game
// catalog (subpackage catalog). Commands take the catalog in their options and
// default to the built-in one.
//
// This package imports only eventlog and its own subpackages (deps_test.go).
package commands
