package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/civnode/civnode/eventlog"
)

const (
	// proofTimeout bounds the proof exchange on a connection; the node answers
	// it without touching the log.
	proofTimeout = 10 * time.Second
	// ProofAnswerLimit bounds what is read of a proof answer, which is about
	// 200 bytes.
	ProofAnswerLimit = 4 << 10
)

// ProveNode asks the process at the other end of conn, dialed at host, to
// sign a fresh nonce with the key of pub, over the address conn dialed
// (handleNodeProof is the other half). It speaks HTTP/1.1 on conn itself, so
// the proof is made on the very connection that will carry the token, and
// leaves conn ready for the next request. An error says how the process fell
// short.
func ProveNode(ctx context.Context, conn net.Conn, host string, pub ed25519.PublicKey) error {
	deadline := time.Now().Add(proofTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	nonce := make([]byte, eventlog.NodeProofNonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("make nonce: %w", err)
	}
	body, err := json.Marshal(nodeProofRequest{Nonce: hex.EncodeToString(nonce)})
	if err != nil {
		return fmt.Errorf("encode proof request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+"/v1/node/proof", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("proof request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		return fmt.Errorf("send proof request: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fmt.Errorf("read proof answer: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, ProofAnswerLimit+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return fmt.Errorf("read proof answer: %w", err)
	case len(raw) > ProofAnswerLimit:
		return fmt.Errorf("its proof answer is over %d bytes", ProofAnswerLimit)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("it answered the proof request with %s", resp.Status)
	case br.Buffered() != 0:
		// The transport reads the next answer from conn, not from br.
		return errors.New("it sent more than its proof answer")
	case resp.Close:
		return errors.New("it closed the connection after its proof answer")
	}
	var ans nodeProofResponse
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("decode proof answer: %w", err)
	}
	if want := eventlog.DIDKey(pub); ans.NodeDID != want {
		return fmt.Errorf("it is %q, but this data dir's node is %s", ans.NodeDID, want)
	}
	dialed := conn.RemoteAddr().String()
	if !sameAddr(ans.Addr, dialed) {
		return fmt.Errorf("it signed for %s, not %s, the address dialed: a relay, or an address rewritten on the way", ans.Addr, dialed)
	}
	sig, err := base64.StdEncoding.DecodeString(ans.Signature)
	if err != nil {
		return fmt.Errorf("decode proof signature: %w", err)
	}
	if err := eventlog.VerifyNodeProof(pub, ans.Addr, nonce, sig); err != nil {
		return err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("clear deadline: %w", err)
	}
	return nil
}

// sameAddr compares two IP:PORT addresses as addresses, so that an IPv4 address
// and its IPv4-mapped IPv6 form (a node bound to [::] answering 127.0.0.1) are
// the same.
func sameAddr(a, b string) bool {
	pa, errA := netip.ParseAddrPort(a)
	pb, errB := netip.ParseAddrPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa.Addr().Unmap() == pb.Addr().Unmap() && pa.Port() == pb.Port()
}
