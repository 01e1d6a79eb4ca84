package servicenet

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// The x402 header exchange, public x402 specification, transports v1 and v2
// over HTTP, scheme "exact" on EVM (EIP-3009 transferWithAuthorization).
//
//	v1: 402 JSON body {x402Version:1, accepts, error}; the payment goes in
//	    X-PAYMENT; the receipt comes in X-PAYMENT-RESPONSE.
//	v2: 402 header PAYMENT-REQUIRED {x402Version:2, resource, accepts, error};
//	    the payment goes in PAYMENT-SIGNATURE and echoes the chosen requirement
//	    as "accepted"; the receipt comes in PAYMENT-RESPONSE.
//
// Every header value is the standard base64 of a JSON object.

// Header names of the exchange.
const (
	headerPaymentRequired  = "PAYMENT-REQUIRED"   // v2, server → client
	headerPaymentSignature = "PAYMENT-SIGNATURE"  // v2, client → server
	headerPaymentResponse  = "PAYMENT-RESPONSE"   // v2, server → client
	headerXPayment         = "X-PAYMENT"          // v1, client → server
	headerXPaymentResponse = "X-PAYMENT-RESPONSE" // v1, server → client
)

const (
	schemeExact           = "exact"
	transferMethodEIP3009 = "eip3009"
	// defaultMaxTimeoutSeconds is the validity window when a requirement
	// gives none, the x402 examples' usual value.
	defaultMaxTimeoutSeconds = 60
	// clockSkewAllowance is how far in the past an authorization becomes
	// valid. The x402 reference client uses ten minutes, so a payer whose
	// clock runs ahead of the chain's is not refused as "not yet valid".
	clockSkewAllowance = 600 * time.Second
)

// MaxValiditySeconds bounds a requirement's maxTimeoutSeconds: how long after
// it is signed a payment may still be submitted. x402 servers ask for 60 to
// 300 seconds, the time to do the work and settle; an hour leaves room for a
// slow agent, while a signature valid for days or years would be a bearer
// cheque the node could not take back. A requirement beyond it is outside the
// registry's contract and is not paid (docs/limits.md).
const MaxValiditySeconds = 3600

// maxUint256 bounds an amount: the token contract takes a uint256.
var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// wirePaymentRequired is the 402 document of either version, before it is
// checked; accepts stay raw so each requirement keeps the bytes it came in.
type wirePaymentRequired struct {
	Version    *int              `json:"x402Version"`
	Accepts    []json.RawMessage `json:"accepts"`
	Error      string            `json:"error"`
	Resource   json.RawMessage   `json:"resource"`
	Extensions json.RawMessage   `json:"extensions"`
}

// wireRequirement is one requirement of either version: v1 names the price
// maxAmountRequired, v2 amount.
type wireRequirement struct {
	Scheme            string          `json:"scheme"`
	Network           string          `json:"network"`
	MaxAmountRequired *string         `json:"maxAmountRequired"`
	Amount            *string         `json:"amount"`
	Asset             string          `json:"asset"`
	PayTo             string          `json:"payTo"`
	Resource          string          `json:"resource"`
	Description       string          `json:"description"`
	MimeType          string          `json:"mimeType"`
	MaxTimeoutSeconds int64           `json:"maxTimeoutSeconds"`
	Extra             json.RawMessage `json:"extra"`
}

// wireResource is v2's top-level ResourceInfo.
type wireResource struct {
	URL         string `json:"url"`
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
}

// ParsePaymentRequired reads a 402's payment requirements. The v2
// PAYMENT-REQUIRED header wins when present: the v2 transport puts every
// protocol message in headers and leaves the body to the server, so a body
// beside the header may be anything. Without the header the body must be the
// v1 document.
func ParsePaymentRequired(header http.Header, body []byte) (*PaymentRequired, error) {
	if v := header.Get(headerPaymentRequired); v != "" {
		doc, err := decodeHeaderJSON(v)
		if err != nil {
			return nil, fmt.Errorf("x402 %s header: %w", headerPaymentRequired, err)
		}
		p, err := parsePaymentRequired(doc, 2)
		if err != nil {
			return nil, fmt.Errorf("x402 %s header: %w", headerPaymentRequired, err)
		}
		return p, nil
	}
	p, err := parsePaymentRequired(body, 1)
	if err != nil {
		return nil, fmt.Errorf("x402 402 body: %w", err)
	}
	return p, nil
}

// parsePaymentRequired checks a 402 document that must be of version want,
// the version its place in the response implies.
func parsePaymentRequired(doc []byte, want int) (*PaymentRequired, error) {
	var w wirePaymentRequired
	if err := json.Unmarshal(doc, &w); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	switch {
	case w.Version == nil:
		return nil, errors.New("missing x402Version")
	case *w.Version != 1 && *w.Version != 2:
		return nil, fmt.Errorf("unknown x402Version %d", *w.Version)
	case *w.Version != want && want == 2:
		return nil, fmt.Errorf("x402Version %d in the v2 header", *w.Version)
	case *w.Version != want:
		return nil, fmt.Errorf("x402Version %d in the body; v2 requirements come in the %s header", *w.Version, headerPaymentRequired)
	}
	if len(w.Accepts) == 0 {
		return nil, errors.New("empty accepts")
	}
	p := &PaymentRequired{Version: want, Error: w.Error}
	var res wireResource
	if want == 2 && len(w.Resource) > 0 && !bytes.Equal(w.Resource, []byte("null")) {
		if err := json.Unmarshal(w.Resource, &res); err != nil {
			return nil, fmt.Errorf("resource: %w", err)
		}
		p.Resource = w.Resource
	}
	if want == 2 && len(w.Extensions) > 0 && !bytes.Equal(w.Extensions, []byte("null")) {
		if !bytes.HasPrefix(bytes.TrimSpace(w.Extensions), []byte("{")) {
			return nil, errors.New("extensions is not an object")
		}
		p.Extensions = w.Extensions
	}
	for i, raw := range w.Accepts {
		r, err := parseRequirement(raw, want)
		if err != nil {
			return nil, fmt.Errorf("accepts[%d]: %w", i, err)
		}
		// A v2 requirement carries no resource of its own; the document's
		// describes it, so callers read one place for either version.
		if want == 2 {
			r.Resource, r.Description, r.MimeType = res.URL, res.Description, res.MimeType
		}
		p.Accepts = append(p.Accepts, r)
	}
	return p, nil
}

func parseRequirement(raw json.RawMessage, version int) (Requirement, error) {
	var w wireRequirement
	if err := json.Unmarshal(raw, &w); err != nil {
		return Requirement{}, fmt.Errorf("decode JSON: %w", err)
	}
	amountField, amount := "maxAmountRequired", w.MaxAmountRequired
	if version == 2 {
		amountField, amount = "amount", w.Amount
	}
	for _, f := range []struct{ name, value string }{
		{"scheme", w.Scheme}, {"network", w.Network}, {"asset", w.Asset}, {"payTo", w.PayTo},
	} {
		if f.value == "" {
			return Requirement{}, fmt.Errorf("missing %s", f.name)
		}
	}
	if amount == nil {
		return Requirement{}, fmt.Errorf("missing %s", amountField)
	}
	if _, err := parseAmount(*amount); err != nil {
		return Requirement{}, fmt.Errorf("%s: %w", amountField, err)
	}
	if w.MaxTimeoutSeconds < 0 {
		return Requirement{}, fmt.Errorf("maxTimeoutSeconds %d is negative", w.MaxTimeoutSeconds)
	}
	if w.MaxTimeoutSeconds > MaxValiditySeconds {
		return Requirement{}, fmt.Errorf("maxTimeoutSeconds %d is beyond the %d seconds a payment of this node may stay valid",
			w.MaxTimeoutSeconds, MaxValiditySeconds)
	}
	if bytes.Equal(w.Extra, []byte("null")) {
		w.Extra = nil
	}
	return Requirement{
		Scheme:            w.Scheme,
		Network:           w.Network,
		Amount:            *amount,
		Asset:             w.Asset,
		PayTo:             w.PayTo,
		Resource:          w.Resource,
		Description:       w.Description,
		MimeType:          w.MimeType,
		MaxTimeoutSeconds: w.MaxTimeoutSeconds,
		Extra:             w.Extra,
		Raw:               raw,
	}, nil
}

// parseAmount reads an amount in atomic units: a decimal integer that fits
// the token's uint256. Signs, exponents and fractions are refused rather than
// rounded: the price is signed exactly as sent.
func parseAmount(s string) (*big.Int, error) {
	// Without leading zeros: the amount is echoed in the payment as the
	// authorization's value, which must be the very string it was.
	if !isDecimal(s) || len(s) > 1 && s[0] == '0' {
		return nil, fmt.Errorf("%q is not a non-negative decimal integer without leading zeros", s)
	}
	n, _ := new(big.Int).SetString(s, 10)
	if n.Cmp(maxUint256) > 0 {
		return nil, fmt.Errorf("%q exceeds uint256", s)
	}
	return n, nil
}

// Select returns the first requirement the node can pay on network: scheme
// "exact", the same network under either of its names, and an asset transfer
// method of EIP-3009 (the only one a Wallet signs). The registry lists its
// preferences first, so the first match is the one to take.
func (p *PaymentRequired) Select(network string) (Requirement, error) {
	offered := make([]string, 0, len(p.Accepts))
	for _, r := range p.Accepts {
		offered = append(offered, r.Scheme+" on "+r.Network)
		if r.Scheme != schemeExact || !sameNetwork(r.Network, network) {
			continue
		}
		if m := transferMethod(r.Extra); m != "" && m != transferMethodEIP3009 {
			offered[len(offered)-1] += " via " + m
			continue
		}
		return r, nil
	}
	return Requirement{}, fmt.Errorf("%w: want exact (EIP-3009) on %s; offered: %s",
		ErrNoAcceptablePayment, network, strings.Join(offered, ", "))
}

// requirementExtra is the exact scheme's extra: the token's EIP-712 domain
// and, optionally, how the transfer is authorised.
type requirementExtra struct {
	Name                string `json:"name"`
	Version             string `json:"version"`
	AssetTransferMethod string `json:"assetTransferMethod"`
}

// transferMethod is extra.assetTransferMethod; "" when absent, which the
// exact scheme reads as "EIP-3009 when the token supports it".
func transferMethod(extra json.RawMessage) string {
	var e requirementExtra
	if len(extra) == 0 || json.Unmarshal(extra, &e) != nil {
		return ""
	}
	return e.AssetTransferMethod
}

// NewAuthorization builds the EIP-3009 authorization that pays req from the
// address from, valid from a little before now (clock skew) until now plus
// the requirement's timeout. Addresses come out EIP-55 checksummed, as the
// x402 reference client sends them.
func NewAuthorization(req Requirement, from string, now time.Time, nonce [32]byte) (TransferAuthorization, error) {
	if req.Scheme != schemeExact {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: scheme %q is not %q", req.Scheme, schemeExact)
	}
	chainID, err := ChainID(req.Network)
	if err != nil {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: %w", err)
	}
	var extra requirementExtra
	if len(req.Extra) > 0 {
		if err := json.Unmarshal(req.Extra, &extra); err != nil {
			return TransferAuthorization{}, fmt.Errorf("authorize payment: extra: %w", err)
		}
	}
	if extra.Name == "" || extra.Version == "" {
		return TransferAuthorization{}, errors.New("authorize payment: extra has no token name and version; the EIP-712 domain cannot be built")
	}
	value, err := parseAmount(req.Amount)
	if err != nil {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: amount: %w", err)
	}
	asset, err := parseAddress(req.Asset)
	if err != nil {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: asset: %w", err)
	}
	payTo, err := parseAddress(req.PayTo)
	if err != nil {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: payTo: %w", err)
	}
	payer, err := parseAddress(from)
	if err != nil {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: from: %w", err)
	}
	timeout := req.MaxTimeoutSeconds
	if timeout <= 0 {
		timeout = defaultMaxTimeoutSeconds
	}
	if timeout > MaxValiditySeconds {
		return TransferAuthorization{}, fmt.Errorf("authorize payment: maxTimeoutSeconds %d is beyond %d", timeout, MaxValiditySeconds)
	}
	validAfter := max(now.Add(-clockSkewAllowance).Unix(), 0)
	return TransferAuthorization{
		TokenName:         extra.Name,
		TokenVersion:      extra.Version,
		ChainID:           chainID,
		VerifyingContract: asset.Hex(),
		From:              payer.Hex(),
		To:                payTo.Hex(),
		Value:             value,
		ValidAfter:        big.NewInt(validAfter),
		ValidBefore:       big.NewInt(now.Unix() + timeout),
		Nonce:             nonce,
	}, nil
}

// The payment header's JSON, in the member order of the specification's
// examples.
type (
	wirePaymentV1 struct {
		Version int          `json:"x402Version"`
		Scheme  string       `json:"scheme"`
		Network string       `json:"network"`
		Payload wireExactEVM `json:"payload"`
	}
	wirePaymentV2 struct {
		Version  int             `json:"x402Version"`
		Resource json.RawMessage `json:"resource,omitempty"`
		Accepted json.RawMessage `json:"accepted"`
		Payload  wireExactEVM    `json:"payload"`
		// Extensions echoes the server's, as v2 asks of a client.
		Extensions json.RawMessage `json:"extensions,omitempty"`
	}
	wireExactEVM struct {
		Signature     string            `json:"signature"`
		Authorization wireAuthorization `json:"authorization"`
	}
	// wireAuthorization carries uint256 values as decimal strings: JSON
	// numbers lose precision above 2^53.
	wireAuthorization struct {
		From        string `json:"from"`
		To          string `json:"to"`
		Value       string `json:"value"`
		ValidAfter  string `json:"validAfter"`
		ValidBefore string `json:"validBefore"`
		Nonce       string `json:"nonce"`
	}
)

// PaymentHeaderFor builds the header that carries a signed authorization for
// req, one of p's requirements: X-PAYMENT for v1, PAYMENT-SIGNATURE for v2.
// It refuses an authorization that does not pay req exactly, so a header can
// never claim one requirement while the signature pays another.
func PaymentHeaderFor(p *PaymentRequired, req Requirement, auth TransferAuthorization, sig []byte) (PaymentHeader, error) {
	if len(sig) != 65 {
		return PaymentHeader{}, fmt.Errorf("payment header: signature is %d bytes, want 65", len(sig))
	}
	if auth.Value == nil || auth.ValidAfter == nil || auth.ValidBefore == nil {
		return PaymentHeader{}, errors.New("payment header: authorization lacks value or validity bounds")
	}
	if !requirementOf(p, req) {
		return PaymentHeader{}, errors.New("payment header: requirement is not one of the registry's")
	}
	if auth.Value.String() != req.Amount {
		return PaymentHeader{}, fmt.Errorf("payment header: authorization value %s, requirement amount %s", auth.Value, req.Amount)
	}
	if !strings.EqualFold(auth.To, req.PayTo) || !strings.EqualFold(auth.VerifyingContract, req.Asset) {
		return PaymentHeader{}, errors.New("payment header: authorization does not pay the requirement's payTo in its asset")
	}
	payload := wireExactEVM{
		Signature: "0x" + hex.EncodeToString(sig),
		Authorization: wireAuthorization{
			From:        auth.From,
			To:          auth.To,
			Value:       auth.Value.String(),
			ValidAfter:  auth.ValidAfter.String(),
			ValidBefore: auth.ValidBefore.String(),
			Nonce:       "0x" + hex.EncodeToString(auth.Nonce[:]),
		},
	}
	var (
		name string
		doc  any
	)
	switch p.Version {
	case 1:
		name = headerXPayment
		doc = wirePaymentV1{Version: 1, Scheme: req.Scheme, Network: req.Network, Payload: payload}
	case 2:
		// "accepted" must be the requirement as the registry sent it: the
		// server matches it against its own list, member for member.
		name = headerPaymentSignature
		doc = wirePaymentV2{Version: 2, Resource: p.Resource, Accepted: req.Raw, Payload: payload, Extensions: p.Extensions}
	default:
		return PaymentHeader{}, fmt.Errorf("payment header: unknown x402Version %d", p.Version)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return PaymentHeader{}, fmt.Errorf("payment header: %w", err)
	}
	return PaymentHeader{Name: name, Value: base64.StdEncoding.EncodeToString(b)}, nil
}

// requirementOf reports whether req is one of p's requirements, compared by
// the bytes the registry sent.
func requirementOf(p *PaymentRequired, req Requirement) bool {
	if p == nil || len(req.Raw) == 0 {
		return false
	}
	for _, r := range p.Accepts {
		if bytes.Equal(r.Raw, req.Raw) {
			return true
		}
	}
	return false
}

// ParseSettlementResponse reads the settlement receipt of a paid call from
// PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1); nil, nil when the
// response carries neither.
func ParseSettlementResponse(header http.Header) (*SettlementResponse, error) {
	name := headerPaymentResponse
	v := header.Get(name)
	if v == "" {
		name = headerXPaymentResponse
		v = header.Get(name)
	}
	if v == "" {
		return nil, nil
	}
	doc, err := decodeHeaderJSON(v)
	if err != nil {
		return nil, fmt.Errorf("x402 %s header: %w", name, err)
	}
	var s SettlementResponse
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, fmt.Errorf("x402 %s header: decode JSON: %w", name, err)
	}
	s.Raw = doc
	return &s, nil
}

// decodeHeaderJSON undoes a header's base64 and checks that what is left is
// one JSON object. Padding is optional: some encoders drop it. The padded
// form is tried first and the unpadded one after it, rather than choosing by
// the value's length: the decoder skips line breaks, so the length does not
// say which form a value is in.
func decodeHeaderJSON(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		var rawErr error
		if b, rawErr = base64.RawStdEncoding.DecodeString(v); rawErr != nil {
			return nil, fmt.Errorf("decode base64: %w", err)
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, errors.New("decode JSON: not a JSON object")
	}
	return b, nil
}
