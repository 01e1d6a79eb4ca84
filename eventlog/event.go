package eventlog

import (
	"encoding/json"
	"time"
)

// TimeLayout is the one timestamp format of events and audit entries: UTC RFC 3339
// with exactly six fractional digits.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// GenesisPrevHash is the prev_hash of the first event.
const GenesisPrevHash = "0000000000000000000000000000000000000000000000000000000000000000"

// TypeGenesis is the type of the first event of every chain.
const TypeGenesis = "node.genesis"

// ValidType reports whether s is a well-formed event type such as
// "mission.created": at most 128 bytes, and two or more segments of a-z, 0-9
// and _ joined by dots. The small alphabet also means a type never needs
// escaping in JSON.
func ValidType(s string) bool { return len(s) <= 128 && dotted(s, 2) }

// dotted reports whether s is at least min non-empty segments of a-z, 0-9 and
// _ joined by dots: what the regular expression ^[a-z0-9_]+(\.[a-z0-9_]+)+$
// matches for min 2, and with * for min 1, at a fraction of its cost (the
// sequencer checks every draft's type; FuzzDotted holds the two equal).
func dotted(s string, min int) bool {
	segments, n := 1, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if n == 0 {
				return false
			}
			segments, n = segments+1, 0
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
			n++
		default:
			return false
		}
	}
	return n > 0 && segments >= min
}

// Draft is an event before the log gives it a place in the chain.
type Draft struct {
	Type    string
	Payload any // marshalled with encoding/json, then canonicalised (RFC 8785)
	// Decoded, if set, is the Go value that decoding Payload's JSON gives,
	// handed to the read models' fold as Event.Decoded so that the
	// sequencer, the one serial step of an append, need not decode again
	// what the command has just encoded. Replay decodes the stored JSON, so
	// a Decoded that differs from it would make the live models differ from
	// the rebuilt ones.
	Decoded any
}

// Event is one signed link of the chain.
type Event struct {
	ID        string          `json:"id"`
	Seq       uint64          `json:"seq"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	PrevHash  string          `json:"prev_hash"`
	NodeDID   string          `json:"node_did"`
	Payload   json.RawMessage `json:"payload"`
	Signature string          `json:"signature"`

	raw []byte // the stored form; see doc.go
	// folded is what the read models made of the event as the sequencer
	// folded it (ModelTxn.Answer); nil on an event read from the store.
	folded any
	// decoded is the appender's Draft.Decoded; nil on an event read from
	// the store.
	decoded any
}

// Decoded returns the payload as the Go value the command that appended the
// event encoded it from (Draft.Decoded), or nil: always nil on an event read
// from the store, so a fold decodes Payload when it is nil.
func (e *Event) Decoded() any { return e.decoded }

// Folded returns what the read models made of the event when the sequencer
// folded it (ModelTxn.Answer): set on the events Append and Decide return, so
// that a write can answer from its own decision without reading the models
// again; nil on events read from the store and when no model answered.
func (e *Event) Folded() any { return e.folded }

// Raw returns the event's JSON exactly as stored and served. The caller must not
// modify it.
func (e *Event) Raw() []byte { return e.raw }

// SignedBytes returns U, the bytes the event's signature signs and its id
// hashes (doc.go), or nil for an event with no stored form (one built by hand
// rather than appended or read).
func (e *Event) SignedBytes() []byte {
	u, ok := signedFromStored(e.raw)
	if !ok {
		return nil
	}
	return u
}

// MarshalJSON returns the stored form, so an event is served byte for byte as it
// was signed.
func (e Event) MarshalJSON() ([]byte, error) {
	if e.raw != nil {
		return e.raw, nil
	}
	type plain Event
	return json.Marshal(plain(e))
}

// Time parses the event's timestamp.
func (e *Event) Time() time.Time {
	t, _ := time.Parse(TimeLayout, e.Timestamp)
	return t
}

// GenesisPayload is the payload of node.genesis.
type GenesisPayload struct {
	NodeDID   string `json:"node_did"`
	PublicKey string `json:"public_key"` // standard base64 of the 32-byte Ed25519 key
	CreatedAt string `json:"created_at"`
}

func formatMicros(us int64) string { return time.UnixMicro(us).UTC().Format(TimeLayout) }

// parseTimestamp accepts only the exact layout, so that the string an event carries
// is the one its signature covers.
func parseTimestamp(s string) (int64, bool) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil || t.Format(TimeLayout) != s {
		return 0, false
	}
	return t.UnixMicro(), true
}
