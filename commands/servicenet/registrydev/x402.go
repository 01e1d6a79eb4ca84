package registrydev

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
)

// The x402 side of a registry (public x402 specification, scheme "exact" on
// EVM), acting as resource server and facilitator in one: it asks for a
// payment, verifies the one it gets as a facilitator would, and answers with
// a settlement receipt. It settles nothing on a chain.

// x402 header names.
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
	HeaderXPayment         = "X-PAYMENT"
	HeaderXPaymentResponse = "X-PAYMENT-RESPONSE"
)

// Values of a price on Base Sepolia: USDC and a merchant address.
const (
	BaseSepoliaUSDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	MerchantAddress = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
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
}

// Settlement is a payment that verified and was settled.
type Settlement struct {
	Version     int
	Network     string
	Payer       string
	PayTo       string
	Value       string
	Nonce       string
	Transaction string
}

// WithDefaults is p with every member left out set to its default.
func (p Price) WithDefaults() Price {
	if p.Network == "" {
		p.Network = "base-sepolia"
		if p.Version == 2 {
			p.Network = "eip155:84532"
		}
	}
	if p.Asset == "" {
		p.Asset = BaseSepoliaUSDC
	}
	if p.PayTo == "" {
		p.PayTo = MerchantAddress
	}
	if p.Amount == "" {
		p.Amount = "10000"
	}
	if len(p.Extra) == 0 {
		p.Extra = json.RawMessage(`{"name":"USD Coin","version":"2"}`)
	}
	if p.MaxTimeoutSeconds == 0 {
		p.MaxTimeoutSeconds = 60
	}
	return p
}

// Pricing is the card's pricing member for p.
func (p Price) Pricing() map[string]string {
	p = p.WithDefaults()
	return map[string]string{"currency": "USDC", "rail": "x402", "network": p.Network, "asset": p.Asset, "amount": p.Amount}
}

// requirement is p as one entry of accepts.
func (p Price) requirement(resource string) map[string]any {
	p = p.WithDefaults()
	r := map[string]any{"scheme": "exact", "network": p.Network, "asset": p.Asset, "payTo": p.PayTo,
		"maxTimeoutSeconds": p.MaxTimeoutSeconds, "extra": p.Extra}
	if p.Version == 2 {
		r["amount"] = p.Amount
	} else {
		r["maxAmountRequired"] = p.Amount
		r["resource"] = resource
		r["description"] = "agent invocation"
		r["mimeType"] = "application/json"
	}
	return r
}

// PaymentRequired answers 402 with p's requirements and reason.
func (p Price) PaymentRequired(w http.ResponseWriter, req *http.Request, reason string) {
	p = p.WithDefaults()
	resource := "http://" + req.Host + req.URL.EscapedPath()
	if p.Version == 2 {
		doc := map[string]any{"x402Version": 2, "error": reason,
			"resource": map[string]string{"url": resource, "description": "agent invocation", "mimeType": "application/json"},
			"accepts":  []any{p.requirement(resource)}}
		b, _ := json.Marshal(doc)
		w.Header().Set(HeaderPaymentRequired, base64.StdEncoding.EncodeToString(b))
		writeJSON(w, http.StatusPaymentRequired, map[string]any{})
		return
	}
	writeJSON(w, http.StatusPaymentRequired, map[string]any{"x402Version": 1, "error": reason,
		"accepts": []any{p.requirement(resource)}})
}

// PaymentHeader is the header p's version carries a payment in, and the one
// of the other version.
func (p Price) PaymentHeader() (name, other string) {
	if p.Version == 2 {
		return HeaderPaymentSignature, HeaderXPayment
	}
	return HeaderXPayment, HeaderPaymentSignature
}

// SetReceipt sets the settlement receipt header of p's version for s.
func (p Price) SetReceipt(w http.ResponseWriter, s Settlement) {
	b, _ := json.Marshal(map[string]any{"success": true, "transaction": s.Transaction, "network": s.Network, "payer": s.Payer})
	h := HeaderXPaymentResponse
	if p.Version == 2 {
		h = HeaderPaymentResponse
	}
	w.Header().Set(h, base64.StdEncoding.EncodeToString(b))
}

// PaymentDoc is a payment header's JSON, either version.
type PaymentDoc struct {
	Version  int    `json:"x402Version"`
	Scheme   string `json:"scheme"`  // v1
	Network  string `json:"network"` // v1
	Accepted *struct {
		Scheme  string `json:"scheme"`
		Network string `json:"network"`
		Amount  string `json:"amount"`
		Asset   string `json:"asset"`
		PayTo   string `json:"payTo"`
	} `json:"accepted"` // v2
	Payload struct {
		Signature     string `json:"signature"`
		Authorization struct {
			From        string `json:"from"`
			To          string `json:"to"`
			Value       string `json:"value"`
			ValidAfter  string `json:"validAfter"`
			ValidBefore string `json:"validBefore"`
			Nonce       string `json:"nonce"`
		} `json:"authorization"`
	} `json:"payload"`
}

// Facilitator verifies payments and remembers the nonces it has settled. Its
// methods are safe for concurrent use.
type Facilitator struct {
	now    func() time.Time
	mu     sync.Mutex
	nonces map[string]bool
}

// NewFacilitator returns a facilitator that checks validity windows against
// now (time.Now when nil).
func NewFacilitator(now func() time.Time) *Facilitator {
	if now == nil {
		now = time.Now
	}
	return &Facilitator{now: now, nonces: map[string]bool{}}
}

// Verify checks a payment header against price p as a facilitator would:
// the version, scheme, network, recipient and amount, the validity window,
// and that the EIP-712 signature of the EIP-3009 authorization recovers to
// its from. A payment that verifies spends its nonce: the same header is
// refused the second time.
func (f *Facilitator) Verify(p Price, header string) (Settlement, error) {
	p = p.WithDefaults()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return Settlement{}, fmt.Errorf("payment header is not base64: %w", err)
	}
	var doc PaymentDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Settlement{}, fmt.Errorf("payment header is not JSON: %w", err)
	}
	if doc.Version != p.Version {
		return Settlement{}, fmt.Errorf("x402Version %d, want %d", doc.Version, p.Version)
	}
	scheme, network := doc.Scheme, doc.Network
	if p.Version == 2 {
		if doc.Accepted == nil {
			return Settlement{}, errors.New("v2 payment without accepted")
		}
		a := doc.Accepted
		scheme, network = a.Scheme, a.Network
		if a.Amount != p.Amount || !strings.EqualFold(a.Asset, p.Asset) || !strings.EqualFold(a.PayTo, p.PayTo) {
			return Settlement{}, errors.New("accepted is not this agent's requirement")
		}
	}
	auth := doc.Payload.Authorization
	switch {
	case scheme != "exact":
		return Settlement{}, fmt.Errorf("scheme %q, want exact", scheme)
	case network != p.Network:
		return Settlement{}, fmt.Errorf("network %q, want %q", network, p.Network)
	case !strings.EqualFold(auth.To, p.PayTo):
		return Settlement{}, fmt.Errorf("authorization pays %s, not %s", auth.To, p.PayTo)
	case auth.Value != p.Amount:
		return Settlement{}, fmt.Errorf("authorization value %s, want %s", auth.Value, p.Amount)
	}
	var extra struct{ Name, Version string }
	if err := json.Unmarshal(p.Extra, &extra); err != nil {
		return Settlement{}, fmt.Errorf("price extra: %w", err)
	}
	chainID, err := servicenet.ChainID(p.Network)
	if err != nil {
		return Settlement{}, err
	}
	value, ok1 := new(big.Int).SetString(auth.Value, 10)
	after, ok2 := new(big.Int).SetString(auth.ValidAfter, 10)
	before, ok3 := new(big.Int).SetString(auth.ValidBefore, 10)
	if !ok1 || !ok2 || !ok3 {
		return Settlement{}, errors.New("value, validAfter or validBefore is not a decimal integer")
	}
	now := big.NewInt(f.now().Unix())
	if after.Cmp(now) > 0 || before.Cmp(now) <= 0 {
		return Settlement{}, fmt.Errorf("authorization valid from %s to %s, now is %s", after, before, now)
	}
	nonceHex, ok := strings.CutPrefix(auth.Nonce, "0x")
	nonce, err := hex.DecodeString(nonceHex)
	if !ok || err != nil || len(nonce) != 32 {
		return Settlement{}, errors.New("nonce is not 0x and 32 bytes of hex")
	}
	sigHex, ok := strings.CutPrefix(doc.Payload.Signature, "0x")
	sig, err := hex.DecodeString(sigHex)
	if !ok || err != nil {
		return Settlement{}, errors.New("signature is not 0x-hex")
	}
	ta := servicenet.TransferAuthorization{TokenName: extra.Name, TokenVersion: extra.Version, ChainID: chainID,
		VerifyingContract: p.Asset, From: auth.From, To: auth.To, Value: value, ValidAfter: after, ValidBefore: before}
	copy(ta.Nonce[:], nonce)
	signer, err := servicenet.RecoverTransferAuthorization(ta, sig)
	if err != nil {
		return Settlement{}, err
	}
	if !strings.EqualFold(signer, auth.From) {
		return Settlement{}, fmt.Errorf("signature is by %s, not the payer %s", signer, auth.From)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nonces[auth.Nonce] {
		return Settlement{}, errors.New("nonce already used")
	}
	f.nonces[auth.Nonce] = true
	tx := sha256.Sum256(nonce)
	return Settlement{Version: p.Version, Network: p.Network, Payer: auth.From, PayTo: auth.To, Value: auth.Value,
		Nonce: auth.Nonce, Transaction: "0x" + hex.EncodeToString(tx[:])}, nil
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
