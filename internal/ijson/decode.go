package ijson

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// decodeOptions are those of the decode proper. Member names match exactly, as
// v2 does by default: encoding/json also took "Role" for "role", which made a
// misspelt name pass unnoticed next to the rule that unknown fields are refused.
//
// The decode proper runs only on a body Check has passed, which has
// already refused duplicate names and every string that is not valid UTF-8;
// checking them again would only repeat the work (the names of every object
// kept in a set, every string scanned twice).
var decodeOptions = json.JoinOptions(json.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// Decode decodes body, one whole I-JSON value, into dst, a non-nil pointer.
// Whether the body is one I-JSON value is decided first and apart from dst
// (Check), so a fault anywhere is found the same way, inside a free-form
// payload too, and is invalid_json before any question of what the fields
// mean. A refusal is an *Error; a dst that cannot be decoded into at all is
// the caller's fault, a plain error.
func Decode(body []byte, dst any) error {
	if v := reflect.ValueOf(dst); v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("decode request body: destination %T is not a non-nil pointer", dst)
	}
	if err := Check(body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst, decodeOptions); err != nil {
		return unmarshalError(body, err)
	}
	return nil
}

// unmarshalError classifies an error of json.Unmarshal on a body that Check
// passed: a member dst does not declare, or a value of the wrong type.
func unmarshalError(body []byte, err error) error {
	var sem *json.SemanticError
	if !errors.As(err, &sem) {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) { // Check should have found it first
			return syntaxError(body, syn)
		}
		return fmt.Errorf("decode request body: %w", err)
	}
	if errors.Is(sem.Err, json.ErrUnknownName) {
		// The member's own name, not its path: the name is what was misspelt.
		return unknownField(sem.JSONPointer.LastToken())
	}
	field, got := memberPath(body, sem.JSONPointer), valueKind(sem)
	if field == "" {
		return invalidJSON("request body must be %s, not %s", jsonKind(sem.GoType), got)
	}
	return invalidField(field, "field %q must be %s, not %s", field, jsonKind(sem.GoType), got)
}

// valueKind names the JSON value a semantic error is about, with the number
// itself when the number is what failed and it is short: "number 1.5" says why
// it is not an integer.
func valueKind(sem *json.SemanticError) string {
	switch sem.JSONKind {
	case '"':
		return "string"
	case '0':
		if n := len(sem.JSONValue); sem.Err != nil && n > 0 && n <= 32 {
			return "number " + string(sem.JSONValue)
		}
		return "number"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "a different JSON value"
}

// jsonKind names the JSON type a Go type decodes from, for error messages.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "a different JSON type"
	}
}
