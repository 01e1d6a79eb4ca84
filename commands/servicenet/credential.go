package servicenet

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"
)

// The node's own credential (docs/servicenet.md). The registry authenticates the node,
// never its clients: the bearer is the node's registry credential and the
// signature is made with the node key, so a captured request cannot be
// replayed with another path, body or time.
const (
	headerNodeDID       = "X-Node-DID"
	headerNodeTimestamp = "X-Node-Timestamp"
	headerNodeSignature = "X-Node-Signature"
)

// timestampLayout is RFC 3339 in UTC with whole seconds: one spelling per
// instant, so the registry can compare it without parsing variants.
const timestampLayout = "2006-01-02T15:04:05Z"

// SigningBytes is the message the node signs for one registry request:
//
//	METHOD "\n" PATH "\n" TIMESTAMP "\n" lowercase-hex(sha256(body))
//
// PATH is the escaped path as sent, base URL prefix included, without query;
// body is the exact bytes sent (empty for a GET). Exported so that a registry,
// and the docs, can reproduce it.
func SigningBytes(method, path, timestamp string, body []byte) []byte {
	sum := sha256.Sum256(body)
	msg := make([]byte, 0, len(method)+len(path)+len(timestamp)+3+2*sha256.Size)
	msg = append(msg, method...)
	msg = append(msg, '\n')
	msg = append(msg, path...)
	msg = append(msg, '\n')
	msg = append(msg, timestamp...)
	msg = append(msg, '\n')
	return hex.AppendEncode(msg, sum[:])
}

// authenticate sets the node credential headers on req, whose body is body.
// It is called once per attempt, so every retry carries a fresh timestamp.
func (c *Client) authenticate(req *http.Request, body []byte, now time.Time) error {
	ts := now.UTC().Format(timestampLayout)
	sig := c.sign(SigningBytes(req.Method, req.URL.EscapedPath(), ts, body))
	if len(sig) == 0 {
		return errNoSignature
	}
	if c.credential != "" {
		req.Header.Set("Authorization", "Bearer "+c.credential)
	}
	if c.nodeDID != "" {
		req.Header.Set(headerNodeDID, c.nodeDID)
	}
	req.Header.Set(headerNodeTimestamp, ts)
	req.Header.Set(headerNodeSignature, base64.StdEncoding.EncodeToString(sig))
	return nil
}
