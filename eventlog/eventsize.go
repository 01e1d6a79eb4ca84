package eventlog

import "fmt"

// MaxEventSize is the largest event the node stores, in bytes of its stored
// and served form (doc.go): what a reader of the chain (a mirror reading an
// event bundle, a stream client) needs room for. The largest payload the
// commands make is a mission.completed whose result is 256 KiB of control
// characters, each escaped to six bytes (\u0001): 1.5 MiB and a few ids; the
// request body limit keeps what an HTTP client can send below that, and this
// bound holds whatever body limit an embedder sets.
const MaxEventSize = 2 << 20

// maxEnvelope bounds what a stored event holds besides its payload: its keys,
// the node's did:key (56 bytes), prev_hash, seq, timestamp, a type of at most
// 128 bytes, id and signature, about 550 bytes in all.
const maxEnvelope = 1 << 10

// MaxPayloadSize is the largest canonical payload Append and Decide take, so
// that no event they store is over MaxEventSize; a larger one is
// ErrInvalidDraft and nothing of its append is stored.
const MaxPayloadSize = MaxEventSize - maxEnvelope

// checkPayloadSize returns the canonical payload of a draft of type typ, or
// ErrInvalidDraft when it is over MaxPayloadSize.
func checkPayloadSize(typ string, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayloadSize {
		return nil, fmt.Errorf("%w: %s: a payload of %d bytes, over the %d an event may hold", ErrInvalidDraft, typ, len(payload), MaxPayloadSize)
	}
	return payload, nil
}
