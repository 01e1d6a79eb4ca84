package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// decodeJSON reads r's body into dst, which must be a pointer to a struct. The body
// must be exactly one JSON value, no larger than the body limit, with no field that
// dst does not declare: a typo such as agent_credits must fail loudly instead of
// silently becoming 0 (wire.md §1). Every failure is an *Error for the client, except
// a dst that cannot be decoded into at all, which is a programming error (500).
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.bodyLimit))
	if err != nil {
		return decodeError(err)
	}
	// encoding/json lets the last of two equal keys win; {"role":"a","role":"b"}
	// is ambiguous input and is refused like any other malformed body.
	if field, dup := duplicateKey(body); dup {
		return &Error{Status: http.StatusBadRequest, Code: codeInvalidJSON, Field: field,
			Message: fmt.Sprintf("field %q appears more than once", field)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	// A second value, or garbage, after the first is as malformed as a broken first
	// value; a proxy or client bug that concatenates bodies must not pass.
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return invalidJSON("request body holds more than one JSON value")
	default:
		if e := decodeError(err); isCode(e, codeBodyTooLarge) {
			return e
		}
		return invalidJSON("request body has trailing data after the JSON value")
	}
}

// decodeError classifies an error of json.Decoder.Decode.
func decodeError(err error) error {
	var (
		tooLarge *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
		invalid  *json.InvalidUnmarshalError
	)
	switch {
	case errors.As(err, &tooLarge):
		return bodyTooLarge(tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return invalidJSON("request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidJSON("request body ends in the middle of a JSON value")
	case errors.As(err, &syntax):
		return invalidJSON("malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return invalidJSON("request body must be %s, not %s", jsonKind(typ.Type), typ.Value)
		}
		return invalidField(typ.Field, "field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &invalid):
		return fmt.Errorf("decode request body: %w", err)
	}
	// encoding/json reports an unknown field only as text.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field := strings.Trim(name, `"`)
		return unknownField(field)
	}
	return invalidJSON("malformed JSON: %s", err.Error())
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

// isCode reports whether err is an *Error with code.
func isCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
