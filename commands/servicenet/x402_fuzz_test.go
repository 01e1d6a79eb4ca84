package servicenet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// FuzzDecodeHeaderJSON holds the decoding every x402 header value goes
// through against a reference, and ParseSettlementResponse to it: a value is
// accepted exactly when, trimmed, it is standard base64 (padding optional)
// of one JSON object, possibly with surrounding whitespace; the receipt is
// read from PAYMENT-RESPONSE before X-PAYMENT-RESPONSE, keeps the object's
// bytes as Raw, and its fields are those encoding/json reads from them.
func FuzzDecodeHeaderJSON(f *testing.F) {
	for _, s := range []string{
		b64(`{"success":true,"transaction":"0x12","network":"base","payer":"0x34"}`),
		strings.TrimRight(b64(`{"success":true}`), "="), b64(" {} \n"), b64(`[]`), b64(`{"a":1}{}`), b64(`{"success":"yes"}`),
		" " + b64(`{}`) + "\t", b64(`{}`) + "=", "e30", "e30=", "!!", "", b64(v2Doc(v2Requirement)),
	} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Add(b64(`{"success":true}`), b64(`{"success":false}`))
	f.Fuzz(func(t *testing.T, v2, v1 string) {
		for _, v := range []string{v2, v1} {
			got, err := decodeHeaderJSON(v)
			want, ok := referenceHeaderJSON(v)
			if ok != (err == nil) || ok && !bytes.Equal(got, want) {
				t.Fatalf("%q: decoded %q, %v; reference %q, %v", v, got, err, want, ok)
			}
		}
		h := http.Header{}
		if v2 != "" {
			h.Set("PAYMENT-RESPONSE", v2)
		}
		if v1 != "" {
			h.Set("X-PAYMENT-RESPONSE", v1)
		}
		s, err := ParseSettlementResponse(h)
		used := v2 // v2's header wins
		if used == "" {
			used = v1
		}
		if used == "" {
			if s != nil || err != nil {
				t.Fatalf("no receipt header: %+v, %v", s, err)
			}
			return
		}
		doc, ok := referenceHeaderJSON(used)
		var want SettlementResponse
		if ok && json.Unmarshal(doc, &want) != nil {
			ok = false
		}
		if ok != (err == nil) {
			t.Fatalf("%q: receipt %+v, %v; reference accepts %v", used, s, err, ok)
		}
		if err != nil {
			return
		}
		want.Raw = doc
		if s.Success != want.Success || s.Transaction != want.Transaction || s.Network != want.Network ||
			s.Payer != want.Payer || s.ErrorReason != want.ErrorReason || !bytes.Equal(s.Raw, want.Raw) {
			t.Fatalf("%q: receipt %+v, want %+v", used, s, want)
		}
	})
}

// referenceHeaderJSON decodes a header value another way: base64 with or
// without padding, then the JSON object found by a strict decoder.
func referenceHeaderJSON(v string) ([]byte, bool) {
	v = strings.TrimSpace(v)
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(v); err != nil {
			return nil, false
		}
	}
	b = bytes.TrimSpace(b)
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	if d.Decode(&m) != nil || m == nil || len(bytes.TrimSpace(b[d.InputOffset():])) != 0 {
		return nil, false
	}
	return b, true
}

// fuzzWallet is a fixed key, so that a failure reproduces.
func fuzzWallet(tb testing.TB) *EVMWallet {
	tb.Helper()
	key, err := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	if err != nil {
		tb.Fatal(err)
	}
	return newEVMWallet(key)
}

// FuzzPaymentRoundTrip takes the payment terms ParsePaymentRequired accepts
// all the way to a payment header, as the registry client does, and holds
// that each step accepts what the step before it produced: Select finds a
// requirement on the network of one the parser kept; an authorization
// NewAuthorization builds for it is signed by the wallet and recovered to
// the wallet's address; PaymentHeaderFor builds a header for it; and that
// header, decoded, pays exactly the selected requirement: the document's
// version, v1's scheme and network or v2's "accepted" byte for byte as the
// registry sent it, the amount, payTo, the validity window and the nonce.
func FuzzPaymentRoundTrip(f *testing.F) {
	f.Add("", string(v1Body(v1Requirement)), uint8(0))
	f.Add(b64(v2Doc(v2Requirement)), "", uint8(1))
	f.Add(b64(v2Doc(strings.Replace(v2Requirement, `"exact"`, `"upto"`, 1), v2Requirement)), "x", uint8(2))
	f.Add(b64(v2Doc(strings.Replace(v2Requirement, `"maxTimeoutSeconds":60`, `"maxTimeoutSeconds":0`, 1))), "", uint8(3))
	f.Add("", string(v1Body(strings.Replace(v1Requirement, "base-sepolia", "eip155:8453", 1))), uint8(4))
	f.Add("", string(v1Body(strings.Replace(v1Requirement, `"10000"`, `"115792089237316195423570985008687907853269984665640564039457584007913129639935"`, 1))), uint8(5))
	f.Add(b64(strings.Replace(v2Doc(v2Requirement), `"resource":`, `"extensions":{"bazaar":{}},"resource":`, 1)), "", uint8(6))
	f.Add("", string(v1Body(strings.Replace(v1Requirement, `"10000"`, `"010000"`, 1))), uint8(7))
	w := fuzzWallet(f)
	now := time.Unix(1_740_672_149, 0)
	f.Fuzz(func(t *testing.T, header, body string, nonce uint8) {
		h := http.Header{}
		if header != "" {
			h.Set("PAYMENT-REQUIRED", header)
		}
		p, err := ParsePaymentRequired(h, []byte(body))
		if err != nil {
			return
		}
		for _, offered := range p.Accepts {
			req, err := p.Select(offered.Network)
			if err != nil {
				if !errors.Is(err, ErrNoAcceptablePayment) {
					t.Fatalf("select %s: %v", offered.Network, err)
				}
				if m := transferMethod(offered.Extra); offered.Scheme == schemeExact && (m == "" || m == transferMethodEIP3009) {
					t.Fatalf("select %s refused a payable requirement %+v: %v", offered.Network, offered, err)
				}
				continue
			}
			if !requirementOf(p, req) || req.Scheme != schemeExact || !sameNetwork(req.Network, offered.Network) {
				t.Fatalf("select %s gave %+v", offered.Network, req)
			}
			auth, err := NewAuthorization(req, w.Address(), now, [32]byte{nonce, 31: ^nonce})
			if err != nil {
				continue // a registry's terms the node cannot sign: refused before any signature
			}
			sig, err := w.SignTransferAuthorization(context.Background(), auth)
			if err != nil {
				t.Fatalf("sign %+v: %v", auth, err)
			}
			if from, err := RecoverTransferAuthorization(auth, sig); err != nil || from != w.Address() {
				t.Fatalf("signature recovers to %s, %v; want %s", from, err, w.Address())
			}
			ph, err := PaymentHeaderFor(p, req, auth, sig)
			if auth.Value.String() != req.Amount {
				// ParsePaymentRequired refuses an amount that is not the
				// canonical decimal string ("010000"), so none reaches here.
				t.Fatalf("amount %q signed as %s", req.Amount, auth.Value)
			}
			if err != nil {
				t.Fatalf("no header for the selected requirement %+v: %v", req, err)
			}
			checkPaymentHeader(t, p, req, auth, ph)
		}
	})
}

// checkPaymentHeader decodes ph and holds it to the requirement it pays.
func checkPaymentHeader(t *testing.T, p *PaymentRequired, req Requirement, auth TransferAuthorization, ph PaymentHeader) {
	t.Helper()
	raw, err := base64.StdEncoding.Strict().DecodeString(ph.Value)
	if err != nil {
		t.Fatalf("header %s is not standard base64: %v", ph.Name, err)
	}
	var doc struct {
		Version  int             `json:"x402Version"`
		Scheme   string          `json:"scheme"`
		Network  string          `json:"network"`
		Accepted json.RawMessage `json:"accepted"`
		Payload  struct {
			Signature     string            `json:"signature"`
			Authorization wireAuthorization `json:"authorization"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("header %s: %v", ph.Name, err)
	}
	a := doc.Payload.Authorization
	switch {
	case doc.Version != p.Version:
		t.Fatalf("header version %d for terms of version %d", doc.Version, p.Version)
	case p.Version == 1 && (ph.Name != "X-PAYMENT" || doc.Scheme != req.Scheme || doc.Network != req.Network):
		t.Fatalf("v1 header %s pays %s on %s, not %+v", ph.Name, doc.Scheme, doc.Network, req)
	case p.Version == 2 && (ph.Name != "PAYMENT-SIGNATURE" || !bytes.Equal(doc.Accepted, req.Raw)):
		t.Fatalf("v2 header %s accepted %s, the registry sent %s", ph.Name, doc.Accepted, req.Raw)
	case a.Value != req.Amount || !strings.EqualFold(a.To, req.PayTo) || !strings.EqualFold(a.From, auth.From):
		t.Fatalf("authorization %+v does not pay %+v", a, req)
	case a.ValidAfter != auth.ValidAfter.String() || a.ValidBefore != auth.ValidBefore.String() || auth.ValidBefore.Cmp(auth.ValidAfter) <= 0:
		t.Fatalf("authorization valid from %s to %s", a.ValidAfter, a.ValidBefore)
	case len(a.Nonce) != 66 || !strings.HasPrefix(a.Nonce, "0x") || len(doc.Payload.Signature) != 132:
		t.Fatalf("nonce %q, signature %q", a.Nonce, doc.Payload.Signature)
	}
}
