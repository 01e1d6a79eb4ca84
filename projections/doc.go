// Package projections holds civnode's read models: deterministic folds over the
// event chain (missions, identities, bindings, profiles, balances, treasuries, game
// state, registry tasks). A model's Apply is deterministic and its Reset discards
// every state (the Model interface), so a model rebuilt by Rebuild — what `civnode
// serve` does at start and `civnode replay` does alone — answers every query exactly
// as one that followed the chain live. The chain wins any disagreement.
//
// # Read models and decision models
//
// A node feeds each model it queries from eventlog.Options.OnCommit: it sees durable
// events only, before the appender is released, so a client that got a 2xx reads its
// own write. Commands that must decide against current state (a slug must be free,
// an exclusive controller unbound) need more: a second instance of the same model,
// fed from eventlog.Options.OnSequenced, which sees each event as soon as the
// sequencer has placed it. Commands read that decision model only inside
// eventlog.Log.Decide, which runs on the sequencer too, so every decision sees every
// decision before it and two conflicting commands never both succeed. Both instances
// fold the same events in the same order; the decision model is merely ahead by the
// events that are not yet durable. If those never become durable the log fails
// stop and the node takes no more writes, so the two cannot drift apart in service.
//
// Models apply each seq once (an event at or below the last applied seq is
// ignored), hold their state behind a sync.RWMutex and return copies, never
// references into their state. Event payload types come from eventlog/events; this
// package imports only eventlog.
package projections
