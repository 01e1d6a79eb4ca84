package servicenet

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// The fixed vector: Hardhat's well-known first development key signing the
// x402 specification's example authorization (USDC on Base Sepolia). The
// digest and the signature were computed once with viem 2.57.20
// (hashTypedData, privateKeyToAccount(key).signTypedData), independently of
// this package, so they pin the EIP-712 encoding. Both libraries sign with
// RFC 6979 nonces and low s, so the signature is deterministic too.
const (
	vectorKey       = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	vectorAddress   = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	vectorDigest    = "50708d3bf7216e1aeabe7bf22081b9f36c7c287530f92510318f13a03d89dc86"
	vectorSignature = "dc53a4a579de989368a0fae2ef2172ff2f474b4297013f865d171239f17ef4c3" +
		"157b4b4030f1bebc53d55ace15c2377dff501a60e1e56c291f1000d6e78f082f1b"
)

func vectorAuthorization(t *testing.T) TransferAuthorization {
	t.Helper()
	nonce, err := hex.DecodeString("f3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480")
	if err != nil {
		t.Fatal(err)
	}
	return TransferAuthorization{
		TokenName:         "USDC",
		TokenVersion:      "2",
		ChainID:           big.NewInt(84532),
		VerifyingContract: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		From:              vectorAddress,
		To:                "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		Value:             big.NewInt(10000),
		ValidAfter:        big.NewInt(1740672089),
		ValidBefore:       big.NewInt(1740672154),
		Nonce:             [32]byte(nonce),
	}
}

func vectorWallet(t *testing.T) *EVMWallet {
	t.Helper()
	key, err := crypto.HexToECDSA(vectorKey)
	if err != nil {
		t.Fatal(err)
	}
	return newEVMWallet(key)
}

func TestTransferAuthorizationHashVector(t *testing.T) {
	a := vectorAuthorization(t)
	digest, err := TransferAuthorizationHash(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(digest); got != vectorDigest {
		t.Errorf("digest %s, want viem's %s", got, vectorDigest)
	}
	// Address case does not change what is signed.
	a.To, a.VerifyingContract = strings.ToLower(a.To), strings.ToLower(a.VerifyingContract)
	if digest2, _ := TransferAuthorizationHash(a); hex.EncodeToString(digest2) != vectorDigest {
		t.Error("digest depends on address case")
	}
}

func TestEVMSignatureVector(t *testing.T) {
	w := vectorWallet(t)
	if w.Address() != vectorAddress {
		t.Fatalf("address %s, want %s", w.Address(), vectorAddress)
	}
	sig, err := w.SignTransferAuthorization(context.Background(), vectorAuthorization(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sig); got != vectorSignature {
		t.Errorf("signature %s, want viem's %s", got, vectorSignature)
	}
	want, _ := hex.DecodeString(vectorSignature)
	got, err := RecoverTransferAuthorization(vectorAuthorization(t), want)
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorAddress {
		t.Errorf("recovered %s from viem's signature, want %s", got, vectorAddress)
	}
}

func TestEVMSignRecoverRoundTrip(t *testing.T) {
	w, err := NewEVMKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePaymentRequired(headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement))), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := mustRequirement(t, p, "base-sepolia")
	a, err := NewAuthorization(req, w.Address(), time.Now(), [32]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := w.SignTransferAuthorization(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 65 || (sig[64] != 27 && sig[64] != 28) {
		t.Fatalf("signature %x: want 65 bytes ending in 27 or 28", sig)
	}
	got, err := RecoverTransferAuthorization(a, sig)
	if err != nil {
		t.Fatal(err)
	}
	if got != w.Address() {
		t.Errorf("recovered %s, want %s", got, w.Address())
	}

	// v as 0/1 is the same signature.
	raw := append([]byte(nil), sig...)
	raw[64] -= 27
	if got, err := RecoverTransferAuthorization(a, raw); err != nil || got != w.Address() {
		t.Errorf("v=0/1: recovered %s, %v", got, err)
	}

	// Any change to the message moves the recovered address.
	for name, edit := range map[string]func(*TransferAuthorization){
		"value":       func(a *TransferAuthorization) { a.Value = new(big.Int).Add(a.Value, big.NewInt(1)) },
		"to":          func(a *TransferAuthorization) { a.To = "0x0000000000000000000000000000000000000001" },
		"validBefore": func(a *TransferAuthorization) { a.ValidBefore = new(big.Int).Add(a.ValidBefore, big.NewInt(1)) },
		"nonce":       func(a *TransferAuthorization) { a.Nonce[31] ^= 1 },
		"chain":       func(a *TransferAuthorization) { a.ChainID = big.NewInt(8453) },
		"token":       func(a *TransferAuthorization) { a.TokenName = "USD Coin" },
		"contract":    func(a *TransferAuthorization) { a.VerifyingContract = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" },
	} {
		tampered := a
		edit(&tampered)
		if got, err := RecoverTransferAuthorization(tampered, sig); err == nil && got == w.Address() {
			t.Errorf("%s changed, signature still recovers the signer", name)
		}
	}
}

func TestEVMWalletRefusals(t *testing.T) {
	w := vectorWallet(t)
	a := vectorAuthorization(t)

	other := a
	other.From = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	if _, err := w.SignTransferAuthorization(context.Background(), other); err == nil {
		t.Error("signed an authorization from another address")
	}
	lower := a
	lower.From = strings.ToLower(a.From)
	if _, err := w.SignTransferAuthorization(context.Background(), lower); err != nil {
		t.Errorf("from in lower case: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.SignTransferAuthorization(ctx, a); err == nil {
		t.Error("signed with a cancelled context")
	}
	for name, edit := range map[string]func(*TransferAuthorization){
		"no token name":     func(a *TransferAuthorization) { a.TokenName = "" },
		"no chain":          func(a *TransferAuthorization) { a.ChainID = nil },
		"no value":          func(a *TransferAuthorization) { a.Value = nil },
		"negative value":    func(a *TransferAuthorization) { a.Value = big.NewInt(-1) },
		"value over 2^256":  func(a *TransferAuthorization) { a.Value = new(big.Int).Lsh(big.NewInt(1), 256) },
		"bad contract":      func(a *TransferAuthorization) { a.VerifyingContract = "0x12" },
		"bad to checksum":   func(a *TransferAuthorization) { a.To = "0x209693Bc6afc0C5328bA36FaF03C514EF312287c" },
		"to without 0x":     func(a *TransferAuthorization) { a.To = "209693Bc6afc0C5328bA36FaF03C514EF312287C" },
		"no validity bound": func(a *TransferAuthorization) { a.ValidAfter = nil },
	} {
		bad := a
		edit(&bad)
		if _, err := w.SignTransferAuthorization(context.Background(), bad); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
}

func TestRecoverRefusesBadSignatures(t *testing.T) {
	a := vectorAuthorization(t)
	sig, _ := hex.DecodeString(vectorSignature)

	if _, err := RecoverTransferAuthorization(a, sig[:64]); err == nil {
		t.Error("64-byte signature accepted")
	}
	badV := append([]byte(nil), sig...)
	badV[64] = 29
	if _, err := RecoverTransferAuthorization(a, badV); err == nil {
		t.Error("v=29 accepted")
	}
	// The same signature with s' = n - s recovers the same key on a lax
	// verifier; the token contract refuses it, and so do we.
	n := crypto.S256().Params().N
	s := new(big.Int).SetBytes(sig[32:64])
	high := append([]byte(nil), sig...)
	new(big.Int).Sub(n, s).FillBytes(high[32:64])
	high[64] ^= 1 // 27 <-> 28
	if _, err := RecoverTransferAuthorization(a, high); err == nil {
		t.Error("high-s signature accepted")
	}
}

func TestEVMWalletHidesKey(t *testing.T) {
	w := vectorWallet(t)
	for _, s := range []string{
		w.String(),
		fmt.Sprint(w),
		fmt.Sprintf("%v %+v %#v %s", w, w, w, w),
		fmt.Sprintf("%v", []any{w}),
		fmt.Sprintf("%+v", struct{ W Wallet }{w}),
	} {
		if strings.Contains(strings.ToLower(s), vectorKey) {
			t.Errorf("key printed: %s", s)
		}
		if !strings.Contains(s, vectorAddress) {
			t.Errorf("address not printed: %s", s)
		}
	}
	if got, want := w.String(), "EVMWallet{"+vectorAddress+"}"; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}
