package servicenet

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// EVMWallet is a Wallet holding a local secp256k1 key. The key never leaves
// the value: String and GoString show only the address.
type EVMWallet struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

var _ Wallet = (*EVMWallet)(nil)

// NewEVMKey makes a wallet with a fresh random key.
func NewEVMKey() (*EVMWallet, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("generate secp256k1 key: %w", err)
	}
	return newEVMWallet(key), nil
}

func newEVMWallet(key *ecdsa.PrivateKey) *EVMWallet {
	return &EVMWallet{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}
}

// Address is the wallet's address, EIP-55 checksummed.
func (w *EVMWallet) Address() string { return w.addr.Hex() }

// String shows the address only, so a wallet printed by mistake leaks nothing.
func (w *EVMWallet) String() string { return "EVMWallet{" + w.addr.Hex() + "}" }

// GoString keeps %#v from printing the key's fields.
func (w *EVMWallet) GoString() string { return w.String() }

// SignTransferAuthorization signs a's EIP-712 hash. It refuses an
// authorization from another account: its signature would be worthless and
// the mistake is the caller's to see. The signature is recovered before it is
// returned, so a fault in hashing or signing shows here rather than as a
// payment the registry refuses.
func (w *EVMWallet) SignTransferAuthorization(ctx context.Context, a TransferAuthorization) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !strings.EqualFold(a.From, w.addr.Hex()) {
		return nil, fmt.Errorf("sign transfer authorization: from %s is not this wallet's address %s", a.From, w.addr.Hex())
	}
	digest, err := TransferAuthorizationHash(a)
	if err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(digest, w.key)
	if err != nil {
		return nil, fmt.Errorf("sign transfer authorization: %w", err)
	}
	// crypto.Sign gives the recovery id 0/1; Ethereum signatures, and
	// EIP-3009's ecrecover, take 27/28.
	sig[crypto.RecoveryIDOffset] += 27
	got, err := RecoverTransferAuthorization(a, sig)
	if err != nil {
		return nil, fmt.Errorf("sign transfer authorization: self-check: %w", err)
	}
	if got != w.addr.Hex() {
		return nil, fmt.Errorf("sign transfer authorization: self-check recovered %s, want %s", got, w.addr.Hex())
	}
	return sig, nil
}

// The EIP-712 type hashes of EIP-3009's TransferWithAuthorization under a
// domain of name, version, chainId and verifyingContract: the types USDC and
// the x402 exact scheme sign. Each is the Keccak-256 of the type's encoding,
// its fields in the order the contract declares them.
var (
	domainTypeHash = crypto.Keccak256(
		[]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	transferAuthorizationTypeHash = crypto.Keccak256(
		[]byte("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
)

// TransferAuthorizationHash is the EIP-712 digest of a, the 32 bytes the
// payer signs and the token contract recovers the signer from:
// keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)), where each
// hashStruct is keccak256 of the type hash and the fields as 32-byte words (a
// string as its keccak256, a number big-endian, an address left-padded).
func TransferAuthorizationHash(a TransferAuthorization) ([]byte, error) {
	if a.TokenName == "" || a.TokenVersion == "" {
		return nil, errors.New("transfer authorization: missing token name or version")
	}
	if a.ChainID == nil || a.ChainID.Sign() <= 0 {
		return nil, errors.New("transfer authorization: missing chain id")
	}
	if a.ChainID.Cmp(maxUint256) > 0 {
		return nil, errors.New("transfer authorization: chainId is not a uint256")
	}
	for _, n := range []struct {
		name string
		v    *big.Int
	}{{"value", a.Value}, {"validAfter", a.ValidAfter}, {"validBefore", a.ValidBefore}} {
		if n.v == nil || n.v.Sign() < 0 || n.v.Cmp(maxUint256) > 0 {
			return nil, fmt.Errorf("transfer authorization: %s is not a uint256", n.name)
		}
	}
	var addrs [3][]byte
	for i, f := range []struct{ name, v string }{
		{"verifyingContract", a.VerifyingContract}, {"from", a.From}, {"to", a.To},
	} {
		addr, err := parseAddress(f.v)
		if err != nil {
			return nil, fmt.Errorf("transfer authorization: %s: %w", f.name, err)
		}
		addrs[i] = common.LeftPadBytes(addr.Bytes(), 32)
	}
	word := func(n *big.Int) []byte { return n.FillBytes(make([]byte, 32)) }
	domain := crypto.Keccak256(domainTypeHash,
		crypto.Keccak256([]byte(a.TokenName)), crypto.Keccak256([]byte(a.TokenVersion)),
		word(a.ChainID), addrs[0])
	message := crypto.Keccak256(transferAuthorizationTypeHash,
		addrs[1], addrs[2], word(a.Value), word(a.ValidAfter), word(a.ValidBefore), a.Nonce[:])
	return crypto.Keccak256([]byte{0x19, 0x01}, domain, message), nil
}

// RecoverTransferAuthorization is the EIP-55 address whose key made sig over
// a: what the token contract checks against a.From. It takes v as 27/28 or
// 0/1 and refuses a malleable (high-s) signature, as the contract does.
func RecoverTransferAuthorization(a TransferAuthorization, sig []byte) (string, error) {
	if len(sig) != crypto.SignatureLength {
		return "", fmt.Errorf("recover transfer authorization: signature is %d bytes, want %d", len(sig), crypto.SignatureLength)
	}
	digest, err := TransferAuthorizationHash(a)
	if err != nil {
		return "", err
	}
	norm := append([]byte(nil), sig...)
	if v := norm[crypto.RecoveryIDOffset]; v == 27 || v == 28 {
		norm[crypto.RecoveryIDOffset] = v - 27
	}
	r, s := new(big.Int).SetBytes(norm[:32]), new(big.Int).SetBytes(norm[32:64])
	if !crypto.ValidateSignatureValues(norm[crypto.RecoveryIDOffset], r, s, true) {
		return "", errors.New("recover transfer authorization: invalid signature values")
	}
	pub, err := crypto.SigToPub(digest, norm)
	if err != nil {
		return "", fmt.Errorf("recover transfer authorization: %w", err)
	}
	return crypto.PubkeyToAddress(*pub).Hex(), nil
}
