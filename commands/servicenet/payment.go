package servicenet

import (
	"context"
	"encoding/json"
	"math/big"
)

// The x402 payment exchange (public x402 specification, scheme "exact" on EVM).

// PaymentRequired is a registry's 402: which payments it accepts. Version is
// 1 when it came as the JSON body {x402Version, accepts}, 2 when it came in
// the PAYMENT-REQUIRED header.
type PaymentRequired struct {
	Version int           `json:"x402Version"`
	Accepts []Requirement `json:"accepts"`
	Error   string        `json:"error,omitempty"`
	// Resource is v2's top-level resource object, and Extensions its
	// extensions object; a v2 payment echoes both back.
	Resource   json.RawMessage `json:"resource,omitempty"`
	Extensions json.RawMessage `json:"extensions,omitempty"`
}

// Requirement is one accepted way to pay. v1 names the amount
// maxAmountRequired, v2 amount; Amount holds either.
type Requirement struct {
	Scheme  string `json:"scheme"`
	Network string `json:"network"`
	// Amount is the price in the asset's atomic units, a decimal integer.
	Amount            string          `json:"amount"`
	Asset             string          `json:"asset"` // the token contract (EIP-3009), 0x-hex
	PayTo             string          `json:"payTo"` // 0x-hex
	Resource          string          `json:"resource,omitempty"`
	Description       string          `json:"description,omitempty"`
	MimeType          string          `json:"mimeType,omitempty"`
	MaxTimeoutSeconds int64           `json:"maxTimeoutSeconds"`
	Extra             json.RawMessage `json:"extra,omitempty"` // {name, version}: the token's EIP-712 domain
	// Raw is the requirement as the registry sent it; a v2 payment echoes it
	// back as "accepted".
	Raw json.RawMessage `json:"-"`
}

// SettlementResponse is the registry's settlement receipt, from the
// X-PAYMENT-RESPONSE (v1) or PAYMENT-RESPONSE (v2) header.
type SettlementResponse struct {
	Success     bool   `json:"success"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer"`
	ErrorReason string `json:"errorReason,omitempty"`
	// Raw is the decoded JSON as the registry sent it.
	Raw json.RawMessage `json:"-"`
}

// TransferAuthorization is an EIP-3009 transferWithAuthorization, the message
// the exact scheme signs as EIP-712 typed data under the token's domain.
type TransferAuthorization struct {
	// The EIP-712 domain: the token's name and version (the requirement's
	// extra), the chain and the token contract.
	TokenName         string
	TokenVersion      string
	ChainID           *big.Int
	VerifyingContract string // 0x-hex
	// The message.
	From        string // 0x-hex, the wallet's address
	To          string // 0x-hex, payTo
	Value       *big.Int
	ValidAfter  *big.Int // unix seconds
	ValidBefore *big.Int // unix seconds
	Nonce       [32]byte
}

// Wallet signs payments for one payment account. The local EVM key
// (EVMWallet) is one implementation; a hardware or remote signer is another.
type Wallet interface {
	// Address is the account's 0x-hex address, EIP-55 checksummed.
	Address() string
	// SignTransferAuthorization returns the 65-byte secp256k1 signature
	// (r ‖ s ‖ v, v = 27 or 28) over the EIP-712 hash of auth.
	SignTransferAuthorization(ctx context.Context, auth TransferAuthorization) ([]byte, error)
}
