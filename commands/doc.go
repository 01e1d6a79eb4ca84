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
// # Entry points
//
// One service per area, each built from its options by its constructor, whose
// methods are the commands: [NewMission] ([Mission]), [NewIdentity]
// ([Identity]), [NewGame] ([Game]), [NewTokens] ([Tokens]),
// [NewPaymentAccounts] ([PaymentAccounts]), [NewServicenet] ([Servicenet]),
// [NewOracle] ([Oracle]) and [NewPeers] ([Peers]). A command takes the
// caller's [Actor] (Peers' record excepted: the node itself observed it) and
// an input struct (CreateMissionInput, BootstrapInput, …) and returns a
// result type. The state a service reads comes through the
// interfaces it declares (MissionReader, IdentityReader, GameReader,
// ServicenetReader, OracleReader, TokenStore, …), which projections satisfies.
//
// A refusal is an [*Error] with a [Kind]; [Invalid], [Missing], [Forbidden],
// [NotFound] and [Conflict] make them, and [CapText] bounds the text of one
// that quotes what a client sent. Who may act is decided by [RequireOwner],
// [RequireAgentOrOwner] and [RequireActsFor]; [ActiveController] and
// [BoundElsewhere] read an identity's controller binding for them.
//
// The rest are the rules the CLI and the HTTP adapter share with the
// commands, so that input is judged alike everywhere: [IsSlug] and
// [ValidPublicID] (ids), [ParseLimit] and [LimitString] (payment account
// limits), [AgentDID] and [AgentKey] (an agent's key from the node key and
// its salt), and for the oracle [ValidFeed], [FeedSigningBytes] (the bytes a
// feed version's signature covers) and [VerifyFeed].
//
// This package imports only eventlog and its own subpackages (deps_test.go).
package commands
