package events

import "encoding/json"

// Event types of x402 payments (docs/servicenet.md). A payment of
// a mission's reward is payment.settled with a mission_id (mission.go); an
// x402 payment is payment.authorized, then payment.settled with rail "x402"
// and no mission_id.
const (
	// TypePaymentAuthorized records a payment the spending limits allowed and
	// the payment account signed. It is recorded before the signature leaves
	// the node, so a crash cannot leave a sent payment unaccounted, and only
	// once the signature exists, so a payment that could not be signed never
	// counts: an authorization counts against the day's limit whether or not
	// the registry then settles it.
	TypePaymentAuthorized = "payment.authorized"
)

// RailX402 is the rail of x402 payments.
const RailX402 = "x402"

// PaymentAuthorized is the payload of payment.authorized: an EIP-3009
// transferWithAuthorization the node signs with a payment account. The
// signature is a bearer instrument until it is settled and is never recorded;
// the nonce identifies the authorization on chain.
type PaymentAuthorized struct {
	PaymentID   string `json:"payment_id"`
	Rail        string `json:"rail"`
	Scheme      string `json:"scheme"`
	X402Version int    `json:"x402_version"`
	AgentID     string `json:"agent_id"`
	// AuthorizedBy is the DID the invoking token acted as.
	AuthorizedBy string `json:"authorized_by"`
	AccountRef   string `json:"account_ref"`
	Payer        string `json:"payer"`
	PayTo        string `json:"pay_to"`
	Asset        string `json:"asset"`
	Network      string `json:"network"`
	// Amount is in the asset's atomic units, a decimal integer.
	Amount      string `json:"amount"`
	Nonce       string `json:"nonce"`
	ValidAfter  int64  `json:"valid_after"`
	ValidBefore int64  `json:"valid_before"`
}

// PaymentReceipt is the payload of an x402 payment.settled: the registry's
// settlement receipt for an authorized payment. It has no mission_id, which is
// how the mission and identity models tell it from a reward.
type PaymentReceipt struct {
	PaymentID   string `json:"payment_id"`
	Rail        string `json:"rail"`
	AgentID     string `json:"agent_id"`
	AccountRef  string `json:"account_ref"`
	Payer       string `json:"payer"`
	Network     string `json:"network"`
	Asset       string `json:"asset"`
	Amount      string `json:"amount"`
	Success     bool   `json:"success"`
	Transaction string `json:"transaction"`
	// Receipt is the settlement response as the registry sent it (decoded from
	// base64), a JSON object.
	Receipt json.RawMessage `json:"receipt"`
}
