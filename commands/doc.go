// Package commands is civnode's write side: one file per command (missions,
// identity, game, tokens). A command validates its input, reads current state
// through small interfaces it declares, checks the rules and decides events,
// which it appends through eventlog.Log.Decide, so that every decision sees the
// ones before it. Nothing else in civnode appends events.
//
// The rules that are game content rather than code — which factions, roles and
// strategies exist, which missions the game publishes — come from the game
// catalog (subpackage catalog). Commands take the catalog in their options and
// default to the built-in one.
//
// Commands arrive with the issues that introduce them; this package imports only
// eventlog and its own subpackages.
package commands
