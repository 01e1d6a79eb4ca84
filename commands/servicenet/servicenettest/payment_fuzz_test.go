package servicenettest

import (
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/registrydev"
)

// fixedWallet signs with a fixed key, so that the seeds are the same in
// every run.
type fixedWallet struct{ key *ecdsa.PrivateKey }

func (w fixedWallet) Address() string { return crypto.PubkeyToAddress(w.key.PublicKey).Hex() }

func (w fixedWallet) SignTransferAuthorization(_ context.Context, a servicenet.TransferAuthorization) ([]byte, error) {
	digest, err := servicenet.TransferAuthorizationHash(a)
	if err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(digest, w.key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27
	return sig, nil
}

// FuzzVerifyPaymentHeader feeds payment headers to the fake registry's
// facilitator (registrydev's Facilitator.Verify), seeded with headers the
// node's own x402 code signs for each version, and holds that a payment it
// settles is one a real facilitator would: the header decodes to the
// price's version, amount, payTo and network, its signature recovers
// (independently of Verify) to the payer the settlement names, and the same
// header is refused the second time, its nonce spent.
func FuzzVerifyPaymentHeader(f *testing.F) {
	key, err := crypto.HexToECDSA("8da4ef21b864d2cc526dbdb2a120bd2874c36c9d0a1fb7f8c63d7f7a8b41de8f")
	if err != nil {
		f.Fatal(err)
	}
	w := fixedWallet{key}
	now := time.Unix(1_740_672_149, 0)
	for version := range 2 {
		p := registrydev.Price{Version: version + 1}
		rec := httptest.NewRecorder()
		p.WithDefaults().PaymentRequired(rec, httptest.NewRequest(http.MethodPost, "/v1/agents/paid/invoke", nil), "pay")
		pr, err := servicenet.ParsePaymentRequired(rec.Header(), rec.Body.Bytes())
		if err != nil {
			f.Fatal(err)
		}
		req, err := pr.Select(pr.Accepts[0].Network)
		if err != nil {
			f.Fatal(err)
		}
		for nonce := range byte(3) {
			auth, err := servicenet.NewAuthorization(req, w.Address(), now, [32]byte{nonce})
			if err != nil {
				f.Fatal(err)
			}
			sig, err := w.SignTransferAuthorization(context.Background(), auth)
			if err != nil {
				f.Fatal(err)
			}
			h, err := servicenet.PaymentHeaderFor(pr, req, auth, sig)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(version), h.Value)
			raw, _ := base64.StdEncoding.DecodeString(h.Value)
			edited := strings.Replace(string(raw), `"value":"10000"`, `"value":"10001"`, 1)
			f.Add(uint8(version), base64.StdEncoding.EncodeToString([]byte(edited)))
			f.Add(uint8(1-version), h.Value)
		}
	}
	f.Add(uint8(0), "")
	f.Add(uint8(1), "e30=")
	f.Fuzz(func(t *testing.T, version uint8, header string) {
		p := registrydev.Price{Version: 1 + int(version%2)}.WithDefaults()
		r := registrydev.NewFacilitator(func() time.Time { return now })
		s, err := r.Verify(p, header)
		if err != nil {
			return
		}
		raw, err := base64.StdEncoding.DecodeString(header)
		if err != nil {
			t.Fatalf("settled a header that is not base64: %v", err)
		}
		var doc registrydev.PaymentDoc
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("settled a header that is not JSON: %v", err)
		}
		a := doc.Payload.Authorization
		if doc.Version != p.Version || s.Version != p.Version || s.Network != p.Network || s.Value != p.Amount ||
			a.Value != p.Amount || !strings.EqualFold(s.PayTo, p.PayTo) || !strings.EqualFold(a.To, p.PayTo) {
			t.Fatalf("settled %+v of header %s for price %+v", s, raw, p)
		}
		var extra struct{ Name, Version string }
		if err := json.Unmarshal(p.Extra, &extra); err != nil {
			t.Fatal(err)
		}
		chainID, err := servicenet.ChainID(p.Network)
		if err != nil {
			t.Fatal(err)
		}
		ta := servicenet.TransferAuthorization{TokenName: extra.Name, TokenVersion: extra.Version, ChainID: chainID,
			VerifyingContract: p.Asset, From: a.From, To: a.To, Value: decimal(t, a.Value),
			ValidAfter: decimal(t, a.ValidAfter), ValidBefore: decimal(t, a.ValidBefore)}
		nonce, ok := strings.CutPrefix(a.Nonce, "0x")
		if !ok || len(nonce) != 64 {
			t.Fatalf("settled nonce %q", a.Nonce)
		}
		copy(ta.Nonce[:], mustHex(t, nonce))
		sigHex, _ := strings.CutPrefix(doc.Payload.Signature, "0x")
		signer, err := servicenet.RecoverTransferAuthorization(ta, mustHex(t, sigHex))
		if err != nil || !strings.EqualFold(signer, s.Payer) {
			t.Fatalf("settled for payer %s; the signature recovers to %s, %v", s.Payer, signer, err)
		}
		if _, err := r.Verify(p, header); err == nil || !strings.Contains(err.Error(), "nonce already used") {
			t.Fatalf("the same header settled twice: %v", err)
		}
	})
}

func decimal(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("settled a non-decimal %q", s)
	}
	return n
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("settled non-hex %q: %v", s, err)
	}
	return b
}
