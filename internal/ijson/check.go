package ijson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Check reports why body is not exactly one I-JSON value, as an *Error naming
// the member at fault, or nil. The walk is syntactic and sees every string,
// names included, at any depth: values that a destination keeps as raw JSON (a
// mission's payload) are checked like any other.
//
// The tokenizer is told to let invalid UTF-8 through so that stringFault, which
// sees each string whole, decides; it still rejects every other grammar fault and
// duplicate names, the latter after stringFault has passed both names.
func Check(body []byte) error {
	d := checkers.Get().(*jsontext.Decoder)
	defer func() {
		d.Reset(noBody) // so that the pool does not keep body alive
		checkers.Put(d)
	}()
	d.Reset(bytes.NewBuffer(body), jsontext.AllowInvalidUTF8(true))
	for {
		var err error
		if d.PeekKind() == '"' {
			var v jsontext.Value
			if v, err = d.ReadValue(); err == nil {
				if fault := stringFault(v); fault != "" {
					return notIJSON(body, d, fault)
				}
			}
		} else {
			_, err = d.ReadToken()
		}
		if err != nil {
			return syntaxError(body, err)
		}
		if d.StackDepth() == 0 {
			break
		}
	}
	// A second value, or garbage, after the first is as malformed as a broken first
	// value; a proxy or client bug that concatenates bodies must not pass.
	if d.PeekKind() != jsontext.KindInvalid {
		return invalidJSON("request body holds more than one JSON value")
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return invalidJSON("request body has trailing data after the JSON value")
	}
	return nil
}

// checkers keeps the decoders of Check, whose state stacks would otherwise be
// grown afresh for every body.
var checkers = sync.Pool{New: func() any { return new(jsontext.Decoder) }}

// noBody is what a decoder reads while it waits in checkers. Nothing reads or
// writes it: a decoder only keeps the pointer until its next Reset.
var noBody = new(bytes.Buffer)

// stringFault names what RFC 7493 forbids in s, one JSON string as written in
// the body (quotes and escapes included, its grammar already checked by the
// tokenizer): invalid UTF-8, a surrogate that is not half of a pair (raw, which
// is invalid UTF-8, or escaped), or a noncharacter (raw or escaped). It returns
// "" for a string without fault.
func stringFault(s []byte) string {
	if len(s) < 2 {
		return "a malformed string"
	}
	s = s[1 : len(s)-1]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < utf8.RuneSelf && c != '\\':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] != 'u':
			i += 2
		case c == '\\':
			r, ok := hex4(s, i+2)
			if !ok {
				return "a malformed \\u escape"
			}
			i += 6
			if utf16.IsSurrogate(r) {
				lo, ok := rune(0), false
				if r < 0xDC00 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					lo, ok = hex4(s, i+2)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return fmt.Sprintf(`the lone surrogate \u%04x`, r)
				}
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			if isNoncharacter(r) {
				return fmt.Sprintf("the noncharacter U+%04X", r)
			}
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return "invalid UTF-8"
			}
			if isNoncharacter(r) {
				return fmt.Sprintf("the noncharacter U+%04X", r)
			}
			i += n
		}
	}
	return ""
}

// hex4 decodes the four hex digits of a \u escape at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// isNoncharacter reports whether r is one of the 66 Unicode noncharacters:
// U+FDD0..U+FDEF and the last two code points of every plane.
func isNoncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || (r&0xFFFE == 0xFFFE && r <= utf8.MaxRune)
}

// notIJSON is the error for a string with fault, the one d has just read.
func notIJSON(body []byte, d *jsontext.Decoder, fault string) error {
	field := memberPath(body, d.StackPointer())
	kind, n := d.StackIndex(d.StackDepth())
	var e *Error
	switch {
	case field == "":
		e = invalidJSON("request body holds %s; request bodies must be I-JSON (RFC 7493)", fault)
	case kind == jsontext.KindBeginObject && n%2 == 1: // a name, not yet its value
		e = invalidJSON("the name of field %q holds %s; request bodies must be I-JSON (RFC 7493)", field, fault)
	default:
		e = invalidJSON("field %q holds %s; request bodies must be I-JSON (RFC 7493)", field, fault)
	}
	e.Field = field
	return e
}

// syntaxError classifies an error of the tokenizer.
func syntaxError(body []byte, err error) error {
	var syn *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF):
		return invalidJSON("request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidJSON("request body ends in the middle of a JSON value")
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		field := memberPath(body, syn.JSONPointer)
		e := invalidJSON("field %q appears more than once", field)
		e.Field = field
		return e
	case errors.As(err, &syn):
		return invalidJSON("malformed JSON at byte %d: %v", syn.ByteOffset, syn.Err)
	}
	return fmt.Errorf("check request body: %w", err)
}
