package http

import (
	"encoding/base64"
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
)

// stateResponse is GET /v1/state (docs/api.md). Parts that later work fills in
// (brain, autonomy) are present with their empty values, so clients can rely on
// the shape today.
type stateResponse struct {
	Identity    stateIdentity    `json:"identity"`
	MemoryOwner stateMemoryOwner `json:"memory_owner"`
	Balance     stateBalance     `json:"balance"`
	Network     stateNetwork     `json:"network"`
	Brain       stateBrain       `json:"brain"`
	Autonomy    stateAutonomy    `json:"autonomy"`
	Chain       stateChain       `json:"chain"`
}

type stateIdentity struct {
	NodeDID        string              `json:"node_did"`
	PublicKey      string              `json:"public_key"` // standard base64 of the Ed25519 key
	PublicIdentity statePublicIdentity `json:"public_identity"`
	// ControllerBinding is the node's binding to its own DID with its JWS proof
	// (commands.NodeBinding); null when the server runs without the identity
	// commands, which hold the key that signs it.
	ControllerBinding *commands.NodeBinding `json:"controller_binding"`
}

// statePublicIdentity is the node's own public identity. The node is not one of
// the agent identities bootstrapped on it: it has no slug, so public_id is null,
// and its key is the one every event signature verifies against.
type statePublicIdentity struct {
	AgentDID  string  `json:"agent_did"`
	PublicID  *string `json:"public_id"`
	PublicKey string  `json:"public_key"` // standard base64 of the Ed25519 key
	KeyType   string  `json:"key_type"`   // always "Ed25519"
}

type stateMemoryOwner struct {
	PublicKey string `json:"public_key"`
}

// stateBalance is the node's own balance: what settlements paid the node DID
// itself, plus, in credit, the treasuries of the subnets the node governs
// (--governs), which the node holds as their governance actor. The balances of
// the agent identities on the node are theirs, not the node's: they are in each
// identity's stats.
type stateBalance struct {
	Credit     int64 `json:"credit"`
	Reputation int64 `json:"reputation"`
	Capacity   int64 `json:"capacity"`
}

// stateNetwork summarises GET /v1/client/network/status, which Details names
// (stateNetworkOf in network.go).
type stateNetwork struct {
	Status  string      `json:"status"`
	Peers   int         `json:"peers"`
	NATS    networkNATS `json:"nats"`
	Details string      `json:"details"`
}

type stateBrain struct {
	Provider  string  `json:"provider"`
	Reachable bool    `json:"reachable"`
	Model     *string `json:"model"`
}

type stateAutonomy struct {
	Enabled     bool     `json:"enabled"`
	Constraints []string `json:"constraints"`
}

type stateChain struct {
	Seq      uint64 `json:"seq"`
	TipHash  string `json:"tip_hash"`
	RootHash string `json:"root_hash"`
}

// handleState answers GET /v1/state.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	pub := base64.StdEncoding.EncodeToString(s.log.PublicKey())
	tip := s.log.Tip()
	identity := stateIdentity{NodeDID: s.log.NodeDID(), PublicKey: pub,
		PublicIdentity: statePublicIdentity{AgentDID: s.log.NodeDID(), PublicKey: pub, KeyType: "Ed25519"}}
	if s.identity != nil {
		// A mirror has no key to sign the node's binding with: its state
		// shows none.
		b, err := s.identity.NodeBinding()
		switch {
		case errors.Is(err, eventlog.ErrReadOnly):
		case err != nil:
			return err
		default:
			identity.ControllerBinding = &b
		}
	}
	balance, err := s.nodeBalance()
	if err != nil {
		return err
	}
	return writeJSON(w, stateResponse{
		Identity:    identity,
		MemoryOwner: stateMemoryOwner{PublicKey: pub},
		Balance:     balance,
		Network:     stateNetworkOf(s.networkStatus()),
		Brain:       stateBrain{Provider: "none"},
		Autonomy:    stateAutonomy{Constraints: []string{}},
		Chain:       stateChain{Seq: tip.Seq, TipHash: tip.ID, RootHash: s.log.RootHash()},
	})
}

// nodeBalance computes stateBalance from the missions read model; zero without it.
func (s *Server) nodeBalance() (stateBalance, error) {
	if s.missions == nil {
		return stateBalance{}, nil
	}
	own, err := s.missions.Balance(s.log.NodeDID())
	if err != nil {
		return stateBalance{}, err
	}
	b := stateBalance{Credit: own.Credit, Reputation: own.Reputation, Capacity: own.Capacity}
	for _, subnet := range s.governs {
		t, err := s.missions.Treasury(subnet)
		if err != nil {
			return stateBalance{}, err
		}
		b.Credit += t
	}
	return b, nil
}
