package http

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

// nodeProofRequest is the body of POST /v1/node/proof.
type nodeProofRequest struct {
	Nonce string `json:"nonce"`
}

// nodeProofResponse proves that the process answering holds the node key.
type nodeProofResponse struct {
	NodeDID   string `json:"node_did"`
	Addr      string `json:"addr"`
	Signature string `json:"signature"` // standard padded base64, like an event's
}

// nodeProofBodyLimit is far above the one field's 77 bytes and far below the
// body limit of other routes: anyone may call this route, so it reads little.
const nodeProofBodyLimit = 512

// handleNodeProof answers POST /v1/node/proof: the node signs the caller's
// nonce, with its DID and the local address of the connection the request came
// in on (eventlog.NodeProofBytes). The CLI asks before it sends the owner token
// over TCP, so that a process that merely holds --addr never receives it.
//
// It needs no token, because the caller does not yet trust the node with one,
// and it is not rate-limited: a proof costs about twice a GET /v1/health
// (BenchmarkNodeProof), so it is no better a flood than health, and a limit
// would let a flood lock the CLI out. It is no signing oracle: the signed bytes
// have a fixed domain and shape, and the caller picks only 32 bytes of them.
//
// The address is the connection's local address rather than --addr: a node bound
// to 0.0.0.0 or :: signs the concrete address the caller reached, which is the
// address the caller dialed unless something in between rewrote it.
func (s *Server) handleNodeProof(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	r.Body = http.MaxBytesReader(w, r.Body, nodeProofBodyLimit)
	var req nodeProofRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	nonce, err := hex.DecodeString(req.Nonce)
	if err != nil || len(nonce) != eventlog.NodeProofNonceSize || hex.EncodeToString(nonce) != req.Nonce {
		return invalidField("nonce", "nonce must be %d lowercase hex digits: %d random bytes, fresh for each proof",
			2*eventlog.NodeProofNonceSize, eventlog.NodeProofNonceSize)
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return fmt.Errorf("node proof: the connection has no local address")
	}
	sig, err := s.log.SignNodeProof(local.String(), nonce)
	if err != nil {
		return fmt.Errorf("node proof: %w", err)
	}
	return writeJSON(w, nodeProofResponse{
		NodeDID:   s.log.NodeDID(),
		Addr:      local.String(),
		Signature: base64.StdEncoding.EncodeToString(sig),
	})
}
