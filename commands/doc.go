// Package commands is civnode's write side: one file per command (missions,
// identity, game, servicenet, oracle). A command validates its input, reads current
// state through small interfaces it declares, checks the rules and decides events,
// which it appends through eventlog. It is the only caller of eventlog.Append.
//
// Commands arrive with the issues that introduce them; this package imports only
// eventlog.
package commands
