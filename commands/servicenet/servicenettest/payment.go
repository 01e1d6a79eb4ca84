package servicenettest

import (
	"encoding/json"

	"github.com/civnode/civnode/commands/servicenet/registrydev"
)

// The x402 side of the registry is registrydev's, which civnode registry-dev
// serves too: the same requirements, the same facilitator checks. A Price
// adds what only a test asks for: a facilitator that refuses every payment
// (Registry.settle), and a paid answer without a receipt (receiptless).

// Test values of a price: USDC on Base Sepolia and a merchant address.
const (
	BaseSepoliaUSDC = registrydev.BaseSepoliaUSDC
	MerchantAddress = registrydev.MerchantAddress
)

// Price is what an agent charges, and how it asks: x402 Version 1 puts the
// requirements in the 402 body, Version 2 in the PAYMENT-REQUIRED header.
type Price struct {
	// Version is 1 or 2.
	Version int
	// Network defaults to "base-sepolia" (v1) or "eip155:84532" (v2); Asset
	// to BaseSepoliaUSDC, PayTo to MerchantAddress, Amount to "10000".
	Network, Asset, PayTo, Amount string
	// Extra is the token's EIP-712 domain; default {"name":"USD Coin","version":"2"}.
	Extra json.RawMessage
	// MaxTimeoutSeconds defaults to 60.
	MaxTimeoutSeconds int64
	// Refuse, when set, is the reason every payment is refused with, valid or
	// not (a facilitator that finds no funds).
	Refuse string
	// NoReceipt leaves the settlement receipt header out of a paid answer.
	NoReceipt bool
}

// Settlement is a payment the fake verified and settled.
type Settlement = registrydev.Settlement

// dev is p as registrydev prices it.
func (p Price) dev() registrydev.Price {
	return registrydev.Price{Version: p.Version, Network: p.Network, Asset: p.Asset, PayTo: p.PayTo, Amount: p.Amount,
		Extra: p.Extra, MaxTimeoutSeconds: p.MaxTimeoutSeconds}
}

// Pricing is the card's pricing member for p.
func (p Price) Pricing() map[string]string { return p.dev().Pricing() }
