package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds nesting, payloads included, so a hostile file cannot make the
// recursive reader below use unbounded stack.
const maxDepth = 32

// object is a JSON object with its keys in document order, so that an unknown
// field is reported where the reader meets it first.
type object struct {
	keys []string
	vals map[string]any
}

// readTree decodes one JSON value into *object, []any, string, json.Number, bool
// and nil. encoding/json alone would let a repeated key silently win, would name
// no path for an unknown field, and would replace invalid UTF-8; those are refused
// here instead.
func readTree(data []byte) (any, *Error) {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, syntaxError(data, off, "the file is not valid UTF-8")
	}
	r := &treeReader{dec: json.NewDecoder(bytes.NewReader(data)), data: data}
	r.dec.UseNumber()
	v, err := r.value("", 0)
	if err != nil {
		return nil, err
	}
	switch _, terr := r.dec.Token(); {
	case terr == io.EOF:
		return v, nil
	case terr != nil:
		return nil, r.syntax(terr)
	default:
		return nil, syntaxError(data, int(r.dec.InputOffset()), "more data after the catalog object")
	}
}

type treeReader struct {
	dec  *json.Decoder
	data []byte
}

func (r *treeReader) value(path string, depth int) (any, *Error) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, r.syntax(err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth >= maxDepth {
		return nil, &Error{Path: path, Message: fmt.Sprintf("nested more than %d levels deep", maxDepth)}
	}
	if d == '[' {
		list := []any{}
		for i := 0; r.dec.More(); i++ {
			v, err := r.value(indexPath(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, r.closing()
	}
	o := &object{vals: map[string]any{}}
	for r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return nil, r.syntax(err)
		}
		k, _ := tok.(string) // the decoder only yields strings as keys
		kp := fieldPath(path, k)
		if _, dup := o.vals[k]; dup {
			return nil, &Error{Path: kp, Message: "appears twice in one object"}
		}
		v, verr := r.value(kp, depth+1)
		if verr != nil {
			return nil, verr
		}
		o.keys = append(o.keys, k)
		o.vals[k] = v
	}
	return o, r.closing()
}

// closing reads the ] or } that More has announced.
func (r *treeReader) closing() *Error {
	if _, err := r.dec.Token(); err != nil {
		return r.syntax(err)
	}
	return nil
}

func (r *treeReader) syntax(err error) *Error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return syntaxError(r.data, int(se.Offset), se.Error())
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(r.data)) == 0:
		return &Error{Message: "the file is empty"}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return syntaxError(r.data, len(r.data), "the file ends in the middle of a value")
	}
	return syntaxError(r.data, int(r.dec.InputOffset()), err.Error())
}

// syntaxError places msg at a line and column (1-based, in bytes), which is how
// an operator finds a typo in a file they wrote by hand.
func syntaxError(data []byte, off int, msg string) *Error {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return &Error{Message: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, msg)}
}

// plainKey is a key that reads unambiguously after a dot in a path.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldPath appends key to path: roles[1].title, or payload["odd key"] when the
// key would make the path ambiguous.
func fieldPath(path, key string) string {
	switch {
	case !plainKey.MatchString(key):
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// kindOf names the JSON kind of a tree value for messages.
func kindOf(v any) string {
	switch v.(type) {
	case *object:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// plain turns a tree back into values encoding/json marshals (payloads).
func plain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.keys))
		for _, k := range t.keys {
			m[k] = plain(t.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	}
	return v
}
