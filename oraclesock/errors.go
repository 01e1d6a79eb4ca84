package oraclesock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/ijson"
)

// kinds names the kinds of commands.Error on the wire.
var kinds = map[commands.Kind]string{
	commands.KindInvalid:         "invalid",
	commands.KindForbidden:       "forbidden",
	commands.KindNotFound:        "not_found",
	commands.KindConflict:        "conflict",
	commands.KindUpstream:        "upstream",
	commands.KindUpstreamTimeout: "upstream_timeout",
}

var (
	// ErrStopping is a request the node did not take because it is stopping.
	ErrStopping     = errors.New("the node is stopping")
	errRequestLarge = fmt.Errorf("request line over %d bytes", RequestLimit)
)

// ErrorOf is the one function that turns the error of a request into its
// answer. internal reports that err's detail was withheld, so the caller must
// log it.
func ErrorOf(err error) (f Failure, internal bool) {
	var ce *commands.Error
	switch {
	case errors.As(err, &ce) && kinds[ce.Kind] != "":
		return Failure{Kind: kinds[ce.Kind], Code: ce.Code, Message: ce.Message, Field: ce.Field}, false
	case errors.Is(err, ErrStopping):
		return Failure{Kind: "unavailable", Code: "stopping", Message: "the node is stopping"}, false
	case errors.Is(err, eventlog.ErrFailed), errors.Is(err, eventlog.ErrClosed):
		return Failure{Kind: "unavailable", Code: "unavailable", Message: "the node cannot accept writes; see its log"}, true
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{Kind: "unavailable", Code: "timeout",
			Message: fmt.Sprintf("the request took longer than %v", RequestTimeout)}, false
	default:
		return Failure{Kind: "internal", Code: "internal", Message: "internal error; see the node's log"}, true
	}
}

// NodeError is a request the node could not run for a reason of its own
// (stopping, timeout, internal), as opposed to a refusal.
type NodeError struct {
	Via string
	Failure
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("the node at %s: %s (%s)", e.Via, e.Message, e.Code)
}

// err turns an answered failure back into what the commands return: a
// refusal is the *commands.Error, anything else a *NodeError.
func (f *Failure) err(via string) error {
	for k, name := range kinds {
		if name == f.Kind {
			return &commands.Error{Kind: k, Code: f.Code, Field: f.Field, Message: f.Message}
		}
	}
	return &NodeError{Via: via, Failure: *f}
}

// decodeStrict decodes b, one JSON value, into v by the rule the HTTP API
// holds request bodies to (the package doc). Its refusals are *ijson.Error.
func decodeStrict(b []byte, v any) error { return ijson.Decode(b, v) }

// jsonError is the answer to a request line or args (what) that decodeStrict
// refused: invalid_json, whatever the fault, naming the member at fault as the
// commands name their fields (args.as is as).
func jsonError(what string, err error) error {
	e := &commands.Error{Kind: commands.KindInvalid, Code: "invalid_json", Message: what + ": " + err.Error()}
	var he *ijson.Error
	if errors.As(err, &he) {
		e.Message, e.Field = what+": "+he.Message, strings.TrimPrefix(he.Field, "args.")
		if e.Field == "" && what == "args" {
			e.Field = "args"
		}
	}
	return e
}
