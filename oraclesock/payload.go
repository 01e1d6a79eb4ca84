package oraclesock

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/ijson"
)

// CheckPayload refuses, with the commands' own error, a feed payload that
// the socket could not carry to the node's commands: one that is not JSON,
// or not I-JSON (RFC 7493), which the socket refuses. A caller checks it
// before it publishes either way (socket or core), so that both answer a
// bad payload alike; a name twice in the payload is refused, not settled.
func CheckPayload(p json.RawMessage) error {
	p = bytes.TrimSpace(p)
	switch {
	case len(p) == 0:
		return commands.Missing("payload")
	case !json.Valid(p):
		return commands.Invalid("payload", "payload must be JSON")
	}
	if err := ijson.Check(p); err != nil {
		msg := err.Error()
		var he *ijson.Error
		if errors.As(err, &he) {
			msg = he.Message
		}
		return commands.Invalid("payload", "payload must be I-JSON (RFC 7493): %s", msg)
	}
	return nil
}
