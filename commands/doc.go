// Package commands is civnode's write side: one file per command (missions,
// identities, the game, tokens, payment accounts, the registry proxy and its
// payments, the oracle). A command validates its input, reads current state
// through small interfaces it declares, checks the rules and decides events,
// which it appends through eventlog.Log.Decide, so that every decision sees the
// ones before it. The one other writer today is serve's record of its NATS
// leaf links (cmd/civnode/peers.go), which appends peer events as it sees them.
//
// The rules that are game content rather than code — which factions, roles and
// strategies exist, which missions the game publishes — come from the game
// catalog (subpackage catalog). Commands take the catalog in their options and
// default to the built-in one.
//
// This package imports only eventlog and its own subpackages (deps_test.go).
package commands
