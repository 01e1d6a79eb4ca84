package http

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// stateResponse is GET /v1/state (wire.md §6). Parts that later work fills in
// (identity records, balances, network, brain, autonomy) are present with their
// empty values, so clients can rely on the shape today.
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
	NodeDID   string `json:"node_did"`
	PublicKey string `json:"public_key"` // standard base64 of the Ed25519 key
	// PublicIdentity and ControllerBinding are null until the node has a public
	// identity and a binding (with its JWS proof).
	PublicIdentity    json.RawMessage `json:"public_identity"`
	ControllerBinding json.RawMessage `json:"controller_binding"`
}

type stateMemoryOwner struct {
	PublicKey string `json:"public_key"`
}

type stateBalance struct {
	Credit     int64 `json:"credit"`
	Reputation int64 `json:"reputation"`
	Capacity   int64 `json:"capacity"`
}

type stateNetwork struct {
	Status  string    `json:"status"`
	Peers   int       `json:"peers"`
	NATS    stateNATS `json:"nats"`
	Details string    `json:"details"`
}

type stateNATS struct {
	Enabled bool `json:"enabled"`
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
	return writeJSON(w, stateResponse{
		Identity:    stateIdentity{NodeDID: s.log.NodeDID(), PublicKey: pub},
		MemoryOwner: stateMemoryOwner{PublicKey: pub},
		Network: stateNetwork{
			Status:  "not_configured",
			Details: "/v1/client/network/status",
		},
		Brain:    stateBrain{Provider: "none"},
		Autonomy: stateAutonomy{Constraints: []string{}},
		Chain:    stateChain{Seq: tip.Seq, TipHash: tip.ID, RootHash: s.log.RootHash()},
	})
}
