package http

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// decodeJSON reads r's body into dst, which must be a pointer to a struct. The body
// must be exactly one I-JSON value (RFC 7493; see checkIJSON), no larger than the
// body limit, with no field that dst does not declare: a typo such as agent_credits
// must fail loudly instead of silently becoming 0 (docs/api.md). Every failure is an
// *Error for the client, except a dst that cannot be decoded into at all, which is a
// programming error (500).
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(http.MaxBytesReader(w, r.Body, s.bodyLimit), sizeHint(r.ContentLength, s.bodyLimit))
	if err != nil {
		return readError(err)
	}
	return decodeBody(body, dst)
}

// sizeHint is the buffer readBody starts with for a body of declared length n
// (-1: unknown) under limit: room for the whole body and the read that finds
// its end, so a body that is as long as it says is read in one buffer,
// without the doublings of io.ReadAll; at least io.ReadAll's first 512 bytes.
// A length over the limit is not trusted with an allocation; the limit
// refuses such a body anyway.
func sizeHint(n, limit int64) int {
	if n < 0 || n > limit {
		return 512
	}
	return max(int(n)+1, 512)
}

// readBody is io.ReadAll starting from a buffer of size bytes.
func readBody(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// decodeOptions are those of the decode proper. Member names match exactly, as
// v2 does by default: encoding/json also took "Role" for "role", which made a
// misspelt name pass unnoticed next to the rule that unknown fields are refused.
//
// The decode proper runs only on a body checkIJSON has passed, which has
// already refused duplicate names and every string that is not valid UTF-8;
// checking them again would only repeat the work (the names of every object
// kept in a set, every string scanned twice).
var decodeOptions = json.JoinOptions(json.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decodeBody decodes body, a whole request body, into dst. Whether the body is
// one I-JSON value is decided first and apart from dst, so a fault anywhere is
// found the same way, inside a free-form payload too, and is invalid_json before
// any question of what the fields mean.
func decodeBody(body []byte, dst any) error {
	if v := reflect.ValueOf(dst); v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("decode request body: destination %T is not a non-nil pointer", dst)
	}
	if err := checkIJSON(body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst, decodeOptions); err != nil {
		return unmarshalError(body, err)
	}
	return nil
}

// readError classifies a failure to read the body.
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return bodyTooLarge(tooLarge.Limit)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidJSON("request body ends before its declared length")
	}
	return invalidJSON("request body could not be read: %v", err)
}

// unmarshalError classifies an error of json.Unmarshal on a body that checkIJSON
// passed: a member dst does not declare, or a value of the wrong type.
func unmarshalError(body []byte, err error) error {
	var sem *json.SemanticError
	if !errors.As(err, &sem) {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) { // checkIJSON should have found it first
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
