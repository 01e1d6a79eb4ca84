package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/coder/websocket"

	"github.com/civnode/civnode/eventlog"
)

// streamEvent reads the event at seq from a node's API. GET /v1/events pages
// by timestamp and has no seq parameter, but the stream resumes after any seq
// (docs/streaming.md): its first message after after_seq=seq-1 is the event at seq,
// as stored. The caller checks it against the tree's leaf, so a node cannot
// pass off another event.
func streamEvent(ctx context.Context, c *Client, seq uint64) ([]byte, error) {
	evs, err := streamEvents(ctx, c, seq, 1)
	if err != nil {
		return nil, err
	}
	return evs[0], nil
}

// streamEvents reads the n events from seq on from a node's stream, as
// streamEvent reads one.
func streamEvents(ctx context.Context, c *Client, seq uint64, n int) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, observerTimeout)
	defer cancel()
	u := c.base + "/v1/stream?" + url.Values{"after_seq": {strconv.FormatUint(seq-1, 10)}}.Encode()
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.client, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
			return nil, c.answerError("/v1/stream", resp, body)
		}
		return nil, fmt.Errorf("GET /v1/stream from %s: %w", c.via, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(answerLimit)
	out := make([][]byte, 0, n)
	for len(out) < n {
		at := seq + uint64(len(out))
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("read event %d from the stream of %s: %w", at, c.via, err)
		}
		if typ != websocket.MessageText {
			return nil, fmt.Errorf("read event %d from the stream of %s: a binary message", at, c.via)
		}
		out = append(out, bytes.TrimSuffix(msg, []byte("\n")))
	}
	conn.Close(websocket.StatusNormalClosure, "got the events")
	return out, nil
}

// checkEvent checks an event as the chain's observer does (docs/verifying.md
// §2): its id is the SHA-256 of its signed bytes U, the RFC 8785 form of the
// event without id and signature, and its signature verifies over U with the
// node's key. It returns the id's 32 bytes, the leaf's data.
func checkEvent(raw []byte, k Key, seq uint64) ([]byte, error) {
	var ev eventlog.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("decode event %d: %w", seq, err)
	}
	if ev.Seq != seq {
		return nil, fmt.Errorf("the event for seq %d has seq %d", seq, ev.Seq)
	}
	if ev.NodeDID != k.DID {
		return nil, fmt.Errorf("event %d is by %s, not %s", seq, ev.NodeDID, k.DID)
	}
	unsigned, err := json.Marshal(struct {
		NodeDID   string          `json:"node_did"`
		Payload   json.RawMessage `json:"payload"`
		PrevHash  string          `json:"prev_hash"`
		Seq       uint64          `json:"seq"`
		Timestamp string          `json:"timestamp"`
		Type      string          `json:"type"`
	}{ev.NodeDID, ev.Payload, ev.PrevHash, ev.Seq, ev.Timestamp, ev.Type})
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	u, err := eventlog.CanonicalObject(unsigned)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	sum := sha256.Sum256(u)
	if hex.EncodeToString(sum[:]) != ev.ID {
		return nil, fmt.Errorf("event %d: its id %s is not the hash of its content", seq, ev.ID)
	}
	sig, err := base64.StdEncoding.DecodeString(ev.Signature)
	if err != nil || !ed25519.Verify(k.pub, u, sig) {
		return nil, fmt.Errorf("event %d: its signature does not verify with %s", seq, k.Origin)
	}
	return sum[:], nil
}
