package servicenettest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"

	"github.com/civnode/civnode/commands/servicenet"
)

// The x402 side of the registry (public x402 specification, scheme "exact"
// on EVM), acting as resource server and facilitator in one.

// x402 header names.
const (
	headerPaymentRequired  = "PAYMENT-REQUIRED"
	headerPaymentSignature = "PAYMENT-SIGNATURE"
	headerPaymentResponse  = "PAYMENT-RESPONSE"
	headerXPayment         = "X-PAYMENT"
	headerXPaymentResponse = "X-PAYMENT-RESPONSE"
)

// Test values of a price: USDC on Base Sepolia and a merchant address.
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
	// Refuse, when set, is the reason every payment is refused with, valid or
	// not (a facilitator that finds no funds).
	Refuse string
	// NoReceipt leaves the settlement receipt header out of a paid answer.
	NoReceipt bool
}

// Settlement is a payment the fake verified and settled.
type Settlement struct {
	Version     int
	Network     string
	Payer       string
	PayTo       string
	Value       string
	Nonce       string
	Transaction string
}

func (p Price) withDefaults() Price {
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
	p = p.withDefaults()
	return map[string]string{"currency": "USDC", "rail": "x402", "network": p.Network, "asset": p.Asset, "amount": p.Amount}
}

// requirement is p as one entry of accepts.
func (p Price) requirement(resource string) map[string]any {
	p = p.withDefaults()
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

// paymentRequired answers 402 with p's requirements and reason.
func (p Price) paymentRequired(w http.ResponseWriter, req *http.Request, reason string) {
	resource := "http://" + req.Host + req.URL.EscapedPath()
	if p.Version == 2 {
		doc := map[string]any{"x402Version": 2, "error": reason,
			"resource": map[string]string{"url": resource, "description": "agent invocation", "mimeType": "application/json"},
			"accepts":  []any{p.requirement(resource)}}
		b, _ := json.Marshal(doc)
		w.Header().Set(headerPaymentRequired, base64.StdEncoding.EncodeToString(b))
		writeJSON(w, http.StatusPaymentRequired, map[string]any{})
		return
	}
	writeJSON(w, http.StatusPaymentRequired, map[string]any{"x402Version": 1, "error": reason,
		"accepts": []any{p.requirement(resource)}})
}

// paymentDoc is a payment header's JSON, either version.
type paymentDoc struct {
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

// pay checks the invoke's payment against price. It reports true when the
// payment verified, with the receipt header set; otherwise it has answered
// 402.
func (r *Registry) pay(w http.ResponseWriter, req *http.Request, price *Price) bool {
	p := price.withDefaults()
	name, other := headerXPayment, headerPaymentSignature
	if p.Version == 2 {
		name, other = headerPaymentSignature, headerXPayment
	}
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
		b, _ := json.Marshal(map[string]any{"success": true, "transaction": s.Transaction, "network": s.Network, "payer": s.Payer})
		h := headerXPaymentResponse
		if p.Version == 2 {
			h = headerPaymentResponse
		}
		w.Header().Set(h, base64.StdEncoding.EncodeToString(b))
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
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return Settlement{}, fmt.Errorf("payment header is not base64: %w", err)
	}
	var doc paymentDoc
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
	now := big.NewInt(r.opts.Now().Unix())
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nonces[auth.Nonce] {
		return Settlement{}, errors.New("nonce already used")
	}
	r.nonces[auth.Nonce] = true
	tx := sha256.Sum256(nonce)
	return Settlement{Version: p.Version, Network: p.Network, Payer: auth.From, PayTo: auth.To, Value: auth.Value,
		Nonce: auth.Nonce, Transaction: "0x" + hex.EncodeToString(tx[:])}, nil
}
