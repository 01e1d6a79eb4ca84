// Package admin is the owner's administration of the node of a data dir:
// its tokens and payment accounts (civnode token, civnode wallet) and the
// snapshot a backup copies (civnode backup).
//
// [Open] gives the [Owner] of a data dir, whose [Tokens] and [Wallets] are
// those operations; [Snapshot] takes the store's snapshot for a backup.
//
// There are two ways of working, and every operation has both. When no node
// runs on the data dir, it is opened offline and the commands run on its
// core as the node itself (localnode.Owner): whoever can open the data dir holds
// the node key, and the audit entries name the node DID. When a node runs,
// it holds the database, so the same operations go to its admin endpoints
// (/v1/admin/tokens, /v1/admin/payment-accounts, /v1/admin/backup) with the
// owner token, over localnode.Dial's channel, which sends the token only to the
// node of that data dir; the change then takes effect in the running node
// at once. Either way the result is the same and is audited.
//
// No key or secret is logged; a token secret reaches the caller only in the
// IssuedToken of create and rotate.
package admin
