// Package projections holds civnode's read models: deterministic folds over the
// event chain (missions, identities, bindings, profiles, balances, treasuries, game
// state, registry tasks). Apply is deterministic and Restore discards previous state,
// so a model rebuilt by `civnode replay` answers every query exactly as one that
// followed the chain live. The chain wins any disagreement.
//
// The read models arrive with the issues that introduce their events; this package
// imports only eventlog.
package projections
