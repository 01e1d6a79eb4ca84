package eventlog

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"strings"
)

// NodeProofDomain starts every node proof's signed bytes. No other signature
// the node key makes can begin with it: an event's U and a bundle seal begin
// with "{", and the identity commands' compact JWS holds only base64url and
// ".", never the newline. So a proof can never be replayed as anything else,
// whatever nonce the requester chose.
const NodeProofDomain = "civnode-node-proof-v1\n"

// NodeProofNonceSize is the size of a proof's nonce; the requester picks it at
// random, fresh for each proof, so an answer cannot be recorded and replayed.
const NodeProofNonceSize = 32

// NodeProofBytes is what a node proof signs:
//
//	"civnode-node-proof-v1\n" + node_did + "\n" + addr + "\n" + lowercase hex(nonce)
//
// addr is the address the proof was asked on, as the node sees it: binding it
// means a relay on another address cannot pass the node's proof off as its own.
func NodeProofBytes(nodeDID, addr string, nonce []byte) []byte {
	b := make([]byte, 0, len(NodeProofDomain)+len(nodeDID)+len(addr)+2+2*len(nonce))
	b = append(b, NodeProofDomain...)
	b = append(append(b, nodeDID...), '\n')
	b = append(append(b, addr...), '\n')
	return hex.AppendEncode(b, nonce)
}

// SignNodeProof signs NodeProofBytes with the node key. It signs nothing else:
// the domain is fixed here, the nonce must be exactly NodeProofNonceSize bytes
// and addr may not contain a newline, so no caller can make the node sign bytes
// of another shape.
func (l *Log) SignNodeProof(addr string, nonce []byte) ([]byte, error) {
	if err := checkNodeProofInput(addr, nonce); err != nil {
		return nil, err
	}
	if l.ReadOnly() {
		return nil, ErrReadOnly
	}
	return ed25519.Sign(l.key, NodeProofBytes(l.did, addr, nonce)), nil
}

// VerifyNodeProof checks that sig is the proof of the node whose key is pub,
// asked on addr with nonce.
func VerifyNodeProof(pub ed25519.PublicKey, addr string, nonce, sig []byte) error {
	if err := checkNodeProofInput(addr, nonce); err != nil {
		return err
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key has %d bytes", ErrBadNodeProof, len(pub))
	}
	if !ed25519.Verify(pub, NodeProofBytes(DIDKey(pub), addr, nonce), sig) {
		return fmt.Errorf("%w: the signature is not by %s over this nonce and %s", ErrBadNodeProof, DIDKey(pub), addr)
	}
	return nil
}

func checkNodeProofInput(addr string, nonce []byte) error {
	if len(nonce) != NodeProofNonceSize {
		return fmt.Errorf("node proof: nonce has %d bytes, want %d", len(nonce), NodeProofNonceSize)
	}
	if addr == "" || strings.ContainsRune(addr, '\n') {
		return fmt.Errorf("node proof: address %q is empty or holds a newline", addr)
	}
	return nil
}
