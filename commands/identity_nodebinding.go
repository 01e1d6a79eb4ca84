package commands

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/civnode/civnode/eventlog"
)

// NodeBinding is the node's own controller binding, shown in GET /v1/state: the
// node is the controller of its own DID. Proof lets anyone holding the node's
// public key check that the node itself states this binding.
type NodeBinding struct {
	AgentDID       string `json:"agent_did"`
	ControllerKind string `json:"controller_kind"`
	ControllerRef  string `json:"controller_ref"`
	NodeID         string `json:"node_id"`
	OwnershipScope string `json:"ownership_scope"`
	Active         bool   `json:"active"`
	CreatedAt      string `json:"created_at"`
	UpdatedAt      string `json:"updated_at"`
	// Proof is a compact JWS (RFC 7515): header {"alg":"EdDSA","kid":"<node DID>"},
	// payload the RFC 8785 (JCS) serialisation of the binding without proof,
	// Ed25519 signature by the node key over ASCII(base64url(header) "." base64url(payload)),
	// all three parts base64url without padding.
	Proof string `json:"proof"`
}

// NodeControllerKind is the controller_kind of the node's own binding.
const NodeControllerKind = "node"

// NodeBinding returns the node's binding with its proof. It never changes (its
// timestamps are the genesis event's), so it is signed once.
func (c *Identity) NodeBinding() (NodeBinding, error) { return c.nodeBinding() }

func (c *Identity) signNodeBinding() (NodeBinding, error) {
	if c.key == nil {
		return NodeBinding{}, fmt.Errorf("node binding: %w", eventlog.ErrReadOnly)
	}
	genesis, err := c.log.Event(1)
	if err != nil {
		return NodeBinding{}, fmt.Errorf("node binding: read genesis: %w", err)
	}
	did := c.log.NodeDID()
	b := NodeBinding{AgentDID: did, ControllerKind: NodeControllerKind, ControllerRef: did, NodeID: did,
		OwnershipScope: "exclusive", Active: true, CreatedAt: genesis.Timestamp, UpdatedAt: genesis.Timestamp}
	payload, err := json.Marshal(b) // Proof is empty and dropped below
	if err != nil {
		return NodeBinding{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		return NodeBinding{}, err
	}
	delete(m, "proof")
	if payload, err = json.Marshal(m); err != nil {
		return NodeBinding{}, err
	}
	if payload, err = eventlog.CanonicalObject(payload); err != nil {
		return NodeBinding{}, fmt.Errorf("node binding: canonicalise: %w", err)
	}
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}{"EdDSA", did})
	if err != nil {
		return NodeBinding{}, err
	}
	b.Proof = compactJWS(c.key, header, payload)
	return b, nil
}

// compactJWS signs header and payload as RFC 7515 compact serialisation with EdDSA
// (RFC 8037).
func compactJWS(key ed25519.PrivateKey, header, payload []byte) string {
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	return input + "." + enc.EncodeToString(ed25519.Sign(key, []byte(input)))
}
