package commands

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/civnode/civnode/eventlog"
)

// agentKeyDomain separates agent-key derivation from every other use of the node
// key; the version lets a future scheme coexist with identities derived by this one.
const agentKeyDomain = "civnode/agent-key/v1\x00"

// keySaltSize is the length of a key salt in bytes (32 hex digits in the event).
const keySaltSize = 16

// AgentKey derives the private key of the agent identity whose key_salt is saltHex:
//
//	seed = HMAC-SHA256(key = node key seed, msg = "civnode/agent-key/v1" 0x00 ‖ salt)
//	key  = ed25519.NewKeyFromSeed(seed)
//
// The key is never stored: the node key and the salt recorded in
// identity.bootstrapped reproduce it whenever it is needed, so replaying the chain
// restores every agent DID without any state beside node.key (docs/identity.md).
// Callers must not log or persist the result.
func AgentKey(nodeKey ed25519.PrivateKey, saltHex string) (ed25519.PrivateKey, error) {
	if len(nodeKey) != ed25519.PrivateKeySize {
		return nil, errors.New("derive agent key: node key is missing")
	}
	salt, err := hex.DecodeString(saltHex)
	if err != nil || len(salt) != keySaltSize {
		return nil, fmt.Errorf("derive agent key: key salt must be %d bytes of hex", keySaltSize)
	}
	mac := hmac.New(sha256.New, nodeKey.Seed())
	mac.Write([]byte(agentKeyDomain))
	mac.Write(salt)
	return ed25519.NewKeyFromSeed(mac.Sum(nil)), nil
}

// AgentDID is the did:key of the agent identity whose key_salt is saltHex.
func AgentDID(nodeKey ed25519.PrivateKey, saltHex string) (string, error) {
	key, err := AgentKey(nodeKey, saltHex)
	if err != nil {
		return "", err
	}
	return eventlog.DIDKey(key.Public().(ed25519.PublicKey)), nil
}

// newKeySalt draws a fresh salt from r.
func newKeySalt(r io.Reader) (string, error) {
	b := make([]byte, keySaltSize)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("draw key salt: %w", err)
	}
	return hex.EncodeToString(b), nil
}
