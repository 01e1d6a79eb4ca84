// Package servicenet is the node's client of the external agent registry
// (docs/servicenet.md) and the x402 payment exchange it
// may demand.
//
// The registry client ([New] gives a [Client] from its [Config]; client.go)
// lists agents, fetches a [Card] (cached for CardTTL), invokes agents and
// fetches a [Task]. It signs every request with the node's own credential
// (credential.go; [SigningBytes] are the bytes signed, exported so that a
// registry can check them) and never carries the control token. Ids are
// checked against the registry id alphabet ([ValidID]) and path-escaped
// before they become part of a URL, so no id can change the registry's host or
// the path's shape. [Consent] reads the OAuth consent a card asks for. Idempotent calls retry with backoff (retry.go); an invoke is never
// retried, except once with a payment after a 402.
//
// x402 (x402.go) parses a registry's payment requirements
// ([ParsePaymentRequired]: v1 from the 402 body, v2 from the PAYMENT-REQUIRED
// header, into a [PaymentRequired]), makes the EIP-3009 authorization that
// pays one of them ([NewAuthorization], for the network's [ChainID]), builds
// the X-PAYMENT or PAYMENT-SIGNATURE header from it once signed
// ([PaymentHeaderFor]), and reads the settlement receipt back
// ([ParseSettlementResponse]). Signing is behind the [Wallet] interface
// (payment.go), so a hardware or remote signer can replace the local EVM key
// of evmwallet.go ([NewEVMKey], [EVMWallet]); the EIP-712 digest it signs is
// [TransferAuthorizationHash], and [RecoverTransferAuthorization] names the
// address that signed, as the token contract does. Keys live in 0600 files
// kept by [Keystore] ([NewKeystore]; keystore.go), each named by a ref
// ([ValidRef]).
//
// The package decides nothing and records nothing: package commands runs the
// invoke flow, checks spending limits and appends the events.
package servicenet
