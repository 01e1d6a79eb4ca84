// Package projections holds civnode's read models: deterministic folds over the
// event chain (identities, bindings, profiles, missions, balances, treasuries,
// game state, registry receipts and payments, oracle feeds), kept on disk in
// the event log's model space.
//
// # One fold, two ways to read it
//
// Folder is the eventlog.Folder a node opens its log with. The log folds each
// event into every model on its sequencer, as soon as the event has its place in
// the chain, and commits the models' writes in the same Pebble batch as the
// event, together with the seq they have applied. So the models are never
// behind the chain in service, a crash cannot tear them from it, and a restart
// has nothing to replay. Fold is deterministic and holds no state of its own;
// a rebuild (eventlog.Log.RebuildModels, `civnode replay`, or a change of
// Version at start) folds the chain into a fresh key space and discards what
// was there, as hashicorp/raft's FSM Restore does. The chain wins any
// disagreement.
//
// [Missions], [Identities], [Game], [Servicenet] and [Oracle] are the queries
// over that state. Made with their constructors ([NewMissions],
// [NewIdentities], [NewGame], [NewServicenet], [NewOracle]) from a [Source],
// the log, they read a durable snapshot (eventlog.ModelView): a client that
// got a 2xx reads its own write, and nothing that is not durable is ever shown.
// Their Decisions() read the newest state instead, which includes events the
// sequencer has folded but not yet made durable: commands consult it inside
// eventlog.Log.Decide, where every decision sees every decision before it, so
// two conflicting commands never both succeed. It is one model read at two
// points in time, not two models.
//
// [Models] is the one list of the models ([Model]): each one's name, key
// prefix, fold, skipped-event count ([Skipped] reads them all) and summary. Fold runs them in its order, and the node's
// tools (its start-up warning, GET /v1/metrics, civnode replay) report through
// it, so a model added there is folded and reported everywhere.
//
// Version names the layout of the state and what the folds make of the chain;
// a golden test (TestFoldGolden) fails when the folds' output changes and
// Version does not.
//
// Every query returns an error: a failed read of the store is a failure to
// report, never an empty answer. Memory holds no entity: each query reads what
// it needs through Pebble's block cache. The key layout of each model is in the
// comment of its type. Event payload types come from eventlog/events; this
// package imports only eventlog.
//
// # The state map
//
// The state map is what the state root of a state.committed event commits
// to: one entry per record a read route answers by id, "<kind>/<id>" to the
// JCS form of the route's answer. The kinds and their routes are listed with StateKindIdentity;
// StateKeys names the entries an event can change, and a StateView
// (StateValue, StateEntries) reads their values from one durable view.
package projections
