package witness

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
)

// keyDomain separates the witness key's derivation from every other use of
// the node key (agent keys have their own label).
const keyDomain = "civnode/witness-key/v1\x00"

// DeriveKey is the node's witness key:
//
//	seed = HMAC-SHA256(key = node key seed, msg = "civnode/witness-key/v1" 0x00)
//	key  = ed25519.NewKeyFromSeed(seed)
//
// It is never stored: node.key reproduces it. Callers must not log or persist
// the result.
func DeriveKey(nodeKey ed25519.PrivateKey) (ed25519.PrivateKey, error) {
	if len(nodeKey) != ed25519.PrivateKeySize {
		return nil, errors.New("derive the witness key: the node key is missing")
	}
	mac := hmac.New(sha256.New, nodeKey.Seed())
	mac.Write([]byte(keyDomain))
	return ed25519.NewKeyFromSeed(mac.Sum(nil)), nil
}

// Name is the witness key's name for the node with did.
func Name(nodeDID string) string { return "civnode-witness/" + nodeDID }
