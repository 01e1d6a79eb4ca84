// Package registrydev is a stand-in for the agent registry that a node can
// use on one machine, with no network: civnode registry-dev serves it, and
// docs/servicenet.md can be followed end to end against it. It keeps the
// registry's side of the contract the node's client (package servicenet)
// expects, and checks the node's side as a registry would; it holds nothing
// on disk and forgets everything when it stops.
//
// A Server serves
//
//	GET  /v1/agents                           the agents
//	GET  /v1/agents/{id}                      an agent's card
//	POST /v1/agents/{id}/invoke               {message, input, auth_token}
//	POST /v1/agents/{id}/tasks/{task_id}/get  {}
//	GET  /oauth/authorize                     OAuth 2 authorization (code, PKCE S256)
//	POST /oauth/token                         code and refresh grants
//
// for four agents: summarizer (free, answers at once, with an input
// schema), deep-research (free, accepts a task that is running at its first
// fetch and completed at the next), market-data (paid with x402 v2: 10000
// atomic USDC on Base Sepolia) and calendar (needs an OAuth access token this
// server issued).
//
// Every /v1 request must carry the node's signature: X-Node-DID a did:key,
// X-Node-Timestamp RFC 3339 UTC within five minutes of now, and
// X-Node-Signature over servicenet.SigningBytes, verified with the key of the
// DID; anything else is 401. A bearer credential, when sent, is not checked:
// the stand-in issues none.
//
// Payments are verified as an x402 facilitator would (x402.go): the
// requirement's version, network, recipient and amount, the validity
// window, the nonce not seen before, and the EIP-712 signature of the
// EIP-3009 authorization, which must recover to its payer. A payment that
// verifies is answered with a settlement receipt; nothing is settled on a
// chain, and the receipt's transaction is the SHA-256 of the nonce.
//
// OAuth (oauth.go) approves every authorization request at once, as a user
// who always clicks "allow" would: GET /oauth/authorize redirects to the
// redirect_uri with a code, and POST /oauth/token exchanges it, with the PKCE
// verifier, for an access token valid for an hour and a refresh token. Any
// client_id is accepted; a code is good once, for ten minutes, and only with
// the redirect_uri, client_id and verifier it was issued for.
//
// # Entry points
//
// New returns the stand-in (a Server, configured by Options) that civnode
// registry-dev serves.
//
// The four agent routes are a Registry (registry.go), which Server puts its
// node check, OAuth and request log in front of, and which the test fake
// servicenettest builds on with its own agents, recording and faults, so
// that there is one registry to test the node against. NewRegistry serves
// the Agents of a Directory (each with its Answer, and Async for an agent
// that accepts tasks), configured by RegistryOptions (the clock, the
// Facilitator, the OAuth check, and Settle and Refused to watch payments);
// Registry.Serve answers a request that ParsePath has routed to a Route
// (RouteList, RouteCard, RouteInvoke, RouteTask or RouteUnknown), with the
// body read as an Invocation for an invoke; Registry.TaskPolls counts a
// task's fetches.
//
// The x402 side is a Price (WithDefaults, Pricing, PaymentRequired,
// PaymentHeader, SetReceipt), a Facilitator from NewFacilitator whose Verify
// reads a payment header as a PaymentDoc and returns its Settlement, the
// header names (HeaderPaymentRequired, HeaderPaymentSignature,
// HeaderPaymentResponse, HeaderXPayment, HeaderXPaymentResponse) and the
// defaults of a price (BaseSepoliaUSDC, MerchantAddress).
package registrydev
