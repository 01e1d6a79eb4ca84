package ijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
)

// FuzzDecodeIJSON: Decode and a reference built from other parsers agree on
// which bodies are I-JSON; what Decode accepts is valid UTF-8 without
// duplicate names and decodes to what encoding/json makes of it; and a duplicate
// it reports is the one a plain tokenizer finds first, named the same way.
func FuzzDecodeIJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":{"b":[1,{"c":2,"c":3}]}}`, `{"a":"\"","b":1}`, `{"a":1,"\u0061":2}`, `[1,2,{"k":1,"k":1}]`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `{"\udc00":1}`, `{"a":"\ud800\u0041"}`, `{"a":"\uDBFF\uDFFF"}`,
		`{"a":"\uFDD0"}`, "{\"a\":\"\xef\xbf\xbe\"}", "{\"a\":\"\xff\"}", "{\"\xed\xa0\x80\":1}", `{"a":"\\ud800"}`,
		`{"a":"\ufffd"}`, `{"a":1} x`, `{}{}`, `{"a":`, ``, `"x"`, `{"n":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got any
		err := Decode(in, &got) // must not panic or hang on any input
		ref := referenceIJSON(in)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("%q: not a client error: %v", in, err)
		}
		if (err == nil) != (ref == nil) {
			t.Fatalf("%q: Decode says %v, the reference %v", in, err, ref)
		}
		if err != nil {
			if !utf8.ValidString(e.Field) || strings.ContainsFunc(e.Field, isNoncharacter) {
				t.Fatalf("%q: field %q is not I-JSON text", in, e.Field)
			}
			if strings.Contains(e.Message, "appears more than once") {
				if want, dup := duplicateKeyReference(in); !dup || e.Field != want {
					t.Fatalf("%q: duplicate %q, reference %q %v", in, e.Field, want, dup)
				}
			}
			return
		}
		if !utf8.Valid(in) {
			t.Fatalf("%q: accepted invalid UTF-8", in)
		}
		if name, dup := duplicateKeyReference(in); dup {
			t.Fatalf("%q: accepted duplicate name %q", in, name)
		}
		var want any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("%q: accepted, but encoding/json refuses it: %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %#v, encoding/json %#v", in, got, want)
		}
	})
}

// referenceIJSON decides whether body is one I-JSON value another way: the
// library's own strict decode (invalid UTF-8, lone surrogates, duplicate names,
// trailing data), then a search for noncharacters in the decoded text.
func referenceIJSON(body []byte) error {
	var v any
	if err := jsonv2.Unmarshal(body, &v); err != nil {
		return err
	}
	var walk func(any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case string:
			if strings.ContainsFunc(v, isNoncharacterReference) {
				return errors.New("noncharacter in a string")
			}
		case []any:
			for _, x := range v {
				if err := walk(x); err != nil {
					return err
				}
			}
		case map[string]any:
			for k, x := range v {
				if err := walk(k); err != nil {
					return err
				}
				if err := walk(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}

// isNoncharacterReference is Unicode's definition, spelt out rather than
// computed.
func isNoncharacterReference(r rune) bool {
	if r >= 0xFDD0 && r <= 0xFDEF {
		return true
	}
	for plane := rune(0); plane <= 0x10; plane++ {
		if r == plane<<16|0xFFFE || r == plane<<16|0xFFFF {
			return true
		}
	}
	return false
}

// duplicateKeyReference finds the first duplicate key with encoding/json's
// tokenizer, slowly and plainly, and names it as the API does.
func duplicateKeyReference(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // a number beyond float64 is still a token, not the end
	type frame struct {
		object bool
		keys   map[string]bool
		key    string
		expect bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expect && tok != json.Delim('}') {
			top, k := stack[n-1], tok.(string)
			if top.keys[k] {
				p := ""
				for _, f := range stack[:n-1] {
					if f.object {
						p += f.key + "."
					}
				}
				return p + k, true
			}
			top.keys[k], top.key, top.expect = true, k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expect = true
		}
	}
}
