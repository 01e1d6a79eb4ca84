// Package servicenettest runs a programmable fake of the agent registry on
// net/http/httptest, the registry side of the proxy (docs/servicenet.md), for tests of the
// registry proxy in several packages. Like net/http/httptest it is imported by
// tests only.
//
// A Registry serves
//
//	GET  /v1/agents
//	GET  /v1/agents/{id}
//	POST /v1/agents/{id}/invoke
//	POST /v1/agents/{id}/tasks/{task_id}/get
//
// for the agents a test adds. Each Agent has a card (input_schema,
// security_schemes, pricing, requires_payment), a behaviour (completed at once,
// or accepted with a receipt and a task that stays "running" for a number of
// polls and then completes or fails), an optional x402 price (v1: the 402 body;
// v2: the PAYMENT-REQUIRED header) and faults per route (a status, a body that
// breaks the contract, a delay).
//
// The routes themselves are registrydev's Registry, the one civnode
// registry-dev serves: this package adds the agents a test programs, the
// faults in front of the routes, and the record of what was received.
//
// The fake pays attention the way a real registry and its facilitator would:
// it checks the node credential of every request when given the node's public
// key (X-Node-DID, X-Node-Timestamp and X-Node-Signature over
// servicenet.SigningBytes), and it verifies every payment: it decodes
// X-PAYMENT or PAYMENT-SIGNATURE, holds the authorization's payTo, value,
// asset, network and validity window to its requirement, refuses a nonce seen
// before, and recovers the signer of the EIP-712 signature, which must be the
// authorization's from (registrydev's facilitator, the one civnode
// registry-dev runs). A payment that passes is answered with the settlement
// receipt (X-PAYMENT-RESPONSE or PAYMENT-RESPONSE); one that fails gets 402
// again. Every request is recorded (method, escaped path, headers, body) so a
// test can assert what reached the registry, and what did not.
//
// # Entry points
//
// New starts a Registry (configured by Options; URL is its address) and
// Close stops it early. Add and Update set its agents (Agent, with Async,
// Price and Fault), SetListFault the list's fault. Requests returns each
// Request received, Count counts them by Route (RouteList, RouteCard,
// RouteInvoke, RouteTask, RouteUnknown), PaidAttempts counts those that
// carried a payment, Invocations decodes an agent's invoke bodies
// (Invocation), Settlements and Refusals list the payments settled
// (Settlement) and why others were refused, and TaskPolls counts a task's
// fetches. Price.Pricing is a paid card's pricing member; BaseSepoliaUSDC and
// MerchantAddress are a price's defaults.
package servicenettest
