package eventlog

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/mr-tron/base58"
)

// ed25519 multicodec prefix (varint 0xed) used by did:key.
var ed25519Multicodec = []byte{0xed, 0x01}

// DIDKey returns the did:key of an Ed25519 public key:
// "did:key:z" + base58btc(0xed 0x01 ‖ key).
func DIDKey(pub ed25519.PublicKey) string {
	b := make([]byte, 0, len(ed25519Multicodec)+len(pub))
	b = append(append(b, ed25519Multicodec...), pub...)
	return "did:key:z" + base58.Encode(b)
}

// PublicKeyFromDID decodes an Ed25519 did:key.
func PublicKeyFromDID(did string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(did, "did:key:z")
	if !ok {
		return nil, fmt.Errorf("not an ed25519 did:key: %q", did)
	}
	b, err := base58.Decode(rest)
	if err != nil || len(b) != len(ed25519Multicodec)+ed25519.PublicKeySize ||
		b[0] != ed25519Multicodec[0] || b[1] != ed25519Multicodec[1] {
		return nil, fmt.Errorf("not an ed25519 did:key: %q", did)
	}
	return ed25519.PublicKey(b[2:]), nil
}
