package ijson

import "fmt"

// The codes of a refusal, as the API sends them (docs/api.md, "Conventions").
const (
	CodeInvalidJSON  = "invalid_json"  // not one I-JSON value, or not well formed
	CodeUnknownField = "unknown_field" // a member the destination does not declare
	CodeInvalidField = "invalid_field" // a value of the wrong JSON type
)

// Error is bytes the client sent that are not one I-JSON value, or that do not
// fit the destination. Its message never holds more of the input than the
// member's path and a short number.
type Error struct {
	Code    string // CodeInvalidJSON, CodeUnknownField or CodeInvalidField
	Field   string // the member at fault, names joined by dots; "" when none
	Message string // for humans
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func invalidJSON(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf(format, args...)}
}

func unknownField(field string) *Error {
	return &Error{Code: CodeUnknownField, Field: field, Message: fmt.Sprintf("unknown field %q", field)}
}

func invalidField(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidField, Field: field, Message: fmt.Sprintf(format, args...)}
}
