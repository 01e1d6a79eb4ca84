package servicenettest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/civnode/civnode/commands/servicenet/registrydev"
)

// The x402 side of the registry is registrydev's, which civnode registry-dev
// serves too: the same requirements, the same facilitator checks. This file
// adds what only a test asks for: a facilitator that refuses every payment,
// and a paid answer without a receipt.

// x402 header names.
const (
	headerPaymentSignature = registrydev.HeaderPaymentSignature
	headerXPayment         = registrydev.HeaderXPayment
)

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

func (p Price) withDefaults() Price {
	d := p.dev().WithDefaults()
	p.Network, p.Asset, p.PayTo, p.Amount, p.Extra, p.MaxTimeoutSeconds = d.Network, d.Asset, d.PayTo, d.Amount, d.Extra, d.MaxTimeoutSeconds
	return p
}

// Pricing is the card's pricing member for p.
func (p Price) Pricing() map[string]string { return p.dev().Pricing() }

// paymentRequired answers 402 with p's requirements and reason.
func (p Price) paymentRequired(w http.ResponseWriter, req *http.Request, reason string) {
	p.dev().PaymentRequired(w, req, reason)
}

// pay checks the invoke's payment against price. It reports true when the
// payment verified, with the receipt header set; otherwise it has answered
// 402.
func (r *Registry) pay(w http.ResponseWriter, req *http.Request, price *Price) bool {
	p := price.withDefaults()
	name, other := p.dev().PaymentHeader()
	value := req.Header.Get(name)
	if value == "" {
		reason := name + " header is required"
		if req.Header.Get(other) != "" {
			reason = "payment sent in " + other + ", this agent speaks x402 v" + strconv.Itoa(p.Version)
			r.refuse(reason)
		}
		p.paymentRequired(w, req, reason)
		return false
	}
	s, err := r.verify(p, value)
	if err == nil && p.Refuse != "" {
		err = errors.New(p.Refuse)
	}
	if err != nil {
		r.refuse(err.Error())
		p.paymentRequired(w, req, err.Error())
		return false
	}
	r.mu.Lock()
	r.settled = append(r.settled, s)
	r.mu.Unlock()
	if !p.NoReceipt {
		p.dev().SetReceipt(w, s)
	}
	return true
}

func (r *Registry) refuse(reason string) {
	r.mu.Lock()
	r.refusals = append(r.refusals, reason)
	r.mu.Unlock()
}

// verify checks a payment header as a facilitator would, and spends its
// nonce when it verifies.
func (r *Registry) verify(p Price, header string) (Settlement, error) {
	return r.payments.Verify(p.dev(), header)
}
