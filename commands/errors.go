package commands

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind classifies a refused command; the HTTP layer maps each kind to one status
// (docs/api.md) in its single mapping function.
type Kind uint8

const (
	KindInvalid         Kind = iota + 1 // 400: bad input, Field names it
	KindForbidden                       // 403: the actor may not do this
	KindNotFound                        // 404: a named resource does not exist
	KindConflict                        // 409: state or uniqueness conflict
	KindUpstream                        // 502: the agent registry failed or answered out of contract
	KindUpstreamTimeout                 // 504: the agent registry did not answer in time
	// KindFault is 500: the node cannot do this until its operator fixes
	// something of its own (a payment account's key file), which Message
	// says without naming a secret's path; Err holds the detail for the log.
	KindFault
)

// Error is a command refused for a reason the caller can act on.
type Error struct {
	Kind    Kind
	Code    string // snake_case, e.g. "slug_taken", "not_eligible"
	Field   string // the input field at fault, when there is one
	Message string
	// Details are further members of the error body, for the errors that
	// carry data the client needs to act: the pricing of settlement_required,
	// the violations of an input that does not match its schema.
	Details map[string]any
	// Err is the cause, for the node's log; never shown to the client.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
	if e.Field != "" {
		msg += " (" + e.Field + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Invalid reports bad input in field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Code: "invalid_field", Field: field, Message: fmt.Sprintf(format, args...)}
}

// Missing reports a required field that is absent.
func Missing(field string) *Error {
	return &Error{Kind: KindInvalid, Code: "missing_field", Field: field, Message: field + " is required"}
}

// Forbidden reports an actor acting beyond its token.
func Forbidden(code, format string, args ...any) *Error {
	return &Error{Kind: KindForbidden, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports a named resource that does not exist.
func NotFound(code, field, format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Conflict reports a state-machine or uniqueness conflict.
func Conflict(code, field, format string, args ...any) *Error {
	return &Error{Kind: KindConflict, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Bounds of what an error repeats (docs/limits.md): a client's value quoted in a
// message (an id, an input string) can be as large as a request, and an answer
// that echoes it back costs the node as much again.
const (
	// MaxErrorQuote bounds each run of non-space bytes in an error's text,
	// which is where a quoted value sits.
	MaxErrorQuote = 128
	// MaxErrorText bounds an error's whole text.
	MaxErrorText = 1024
)

// CapText bounds an error's text: each run of non-space bytes longer than
// MaxErrorQuote is cut to it, and the whole to MaxErrorText, each cut on a
// character boundary and marked "…". Every error the HTTP API and the MCP
// tools answer passes through it, as do the violations of invalid_input.
func CapText(s string) string {
	if len(s) <= MaxErrorQuote {
		return s
	}
	var b strings.Builder
	for run := 0; s != ""; {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case unicode.IsSpace(r):
			run = 0
		case run+size > MaxErrorQuote:
			// Skip the rest of the run, once marked.
			if run <= MaxErrorQuote {
				b.WriteString("…")
				run = MaxErrorQuote + 1
			}
			s = s[size:]
			continue
		default:
			run += size
		}
		if b.Len()+size > MaxErrorText {
			b.WriteString("…")
			break
		}
		b.WriteString(s[:size])
		s = s[size:]
	}
	return b.String()
}

// errDIDCollision would mean two salts gave one key: with 128-bit salts, a broken
// random source.
var errDIDCollision = errors.New("bootstrap identity: derived agent DID already exists; check the random source")

// errBadSchema marks a card whose input_schema does not compile.
var errBadSchema = errors.New("input_schema does not compile")
