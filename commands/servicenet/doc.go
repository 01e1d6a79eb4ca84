// Package servicenet is the node's client of the external agent registry
// (docs/servicenet.md) and the x402 payment exchange it
// may demand.
//
// The registry client (client.go) lists agents, fetches cards (cached for
// CardTTL), invokes agents and fetches tasks. It signs every request with the
// node's own credential (credential.go) and never carries the control token.
// Ids are checked against the registry id alphabet and path-escaped before they
// become part of a URL, so no id can change the registry's host or the path's
// shape. Idempotent calls retry with backoff (retry.go); an invoke is never
// retried, except once with a payment after a 402.
//
// x402 (x402.go) parses a registry's payment requirements, v1 from the 402
// body and v2 from the PAYMENT-REQUIRED header, builds the X-PAYMENT or
// PAYMENT-SIGNATURE header from a signed EIP-3009 authorization, and reads the
// settlement receipt back. Signing is behind the Wallet interface (payment.go),
// so a hardware or remote signer can replace the local EVM key of
// evmwallet.go; keys live in 0600 files kept by Keystore (keystore.go).
//
// The package decides nothing and records nothing: package commands runs the
// invoke flow, checks spending limits and appends the events.
package servicenet
