package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// canonicalPayload returns the RFC 8785 form of a JSON object payload.
func canonicalPayload(raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("payload is not a JSON object")
	}
	out, err := canonicalJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalise payload: %w", err)
	}
	return out, nil
}

// CanonicalObject returns the RFC 8785 form of a JSON object, by the same encoder
// the log canonicalises payloads with, so that bytes a command signs or checks
// are the bytes the log would store.
func CanonicalObject(raw []byte) ([]byte, error) { return canonicalPayload(raw) }

// signedBytes assembles U (doc.go). JCS sorts keys and the fields other than the
// payload are validated to need no escaping, so U is a concatenation in fixed key
// order with only the payload passed through the JCS encoder. payload must already
// be canonical.
func signedBytes(dst []byte, nodeDID string, payload []byte, prevHash string, seq uint64, timestamp, typ string) []byte {
	dst = append(dst, `{"node_did":"`...)
	dst = append(dst, nodeDID...)
	dst = append(dst, `","payload":`...)
	dst = append(dst, payload...)
	dst = append(dst, `,"prev_hash":"`...)
	dst = append(dst, prevHash...)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"timestamp":"`...)
	dst = append(dst, timestamp...)
	dst = append(dst, `","type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `"}`...)
	return dst
}

const (
	idHexLen  = 64
	sigB64Len = 88
	// storedSuffixLen is the length of `,"id":"…","signature":"…"}`.
	storedSuffixLen = len(`,"id":"`) + idHexLen + len(`","signature":"`) + sigB64Len + len(`"}`)
)

// storedForm appends id and signature to U, giving the stored and served event.
func storedForm(u []byte, id [32]byte, sig []byte) []byte {
	out := make([]byte, 0, len(u)+storedSuffixLen-1)
	return appendStoredSuffix(append(out, u[:len(u)-1]...), id, sig)
}

// appendStoredSuffix appends `,"id":"…","signature":"…"}` to U without its
// closing brace.
func appendStoredSuffix(out []byte, id [32]byte, sig []byte) []byte {
	out = append(out, `,"id":"`...)
	out = hex.AppendEncode(out, id[:])
	out = append(out, `","signature":"`...)
	out = base64.StdEncoding.AppendEncode(out, sig)
	out = append(out, `"}`...)
	return out
}

// signedFromStored recovers U from a stored event.
func signedFromStored(stored []byte) ([]byte, bool) {
	if len(stored) < storedSuffixLen+2 || !bytes.HasPrefix(stored[len(stored)-storedSuffixLen:], []byte(`,"id":"`)) {
		return nil, false
	}
	u := make([]byte, 0, len(stored)-storedSuffixLen+1)
	u = append(u, stored[:len(stored)-storedSuffixLen]...)
	return append(u, '}'), true
}

func hashID(u []byte) [32]byte { return sha256.Sum256(u) }

// sealedBytes is what bundle_signature signs: the JCS of exactly these three keys.
func sealedBytes(root, tip, generatedAt string) []byte {
	b, _ := json.Marshal(struct {
		Root string `json:"chain_root_hash"`
		Tip  string `json:"chain_tip_hash"`
		Gen  string `json:"generated_at"`
	}{root, tip, generatedAt})
	return b // already canonical: sorted keys, ASCII values needing no escapes
}

// Canonical is a payload already in RFC 8785 form. A Draft whose Payload is a
// Canonical is not re-encoded on the sequencer: a command that decides with Decide
// builds its payload with Canonicalize on its own goroutine first, which keeps the
// one serial step of the log short.
type Canonical struct{ b []byte }

// Canonicalize encodes v with encoding/json and canonicalises the result; v must
// encode as a JSON object. A v that is a CanonicalAppender writes its own form
// instead, which is taken as it is; when it declines, v is encoded as any other.
func Canonicalize(v any) (Canonical, error) {
	if a, ok := v.(CanonicalAppender); ok {
		if b, ok := a.AppendCanonical(nil); ok {
			return Canonical{b}, nil
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Canonical{}, fmt.Errorf("%w: %w", ErrInvalidDraft, err)
	}
	b, err := canonicalPayload(raw)
	if err != nil {
		return Canonical{}, fmt.Errorf("%w: %w", ErrInvalidDraft, err)
	}
	return Canonical{b}, nil
}
