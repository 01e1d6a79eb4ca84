package ijson

import (
	"errors"
	"fmt"
	"testing"
)

// TestDecodeDuplicateNames: a name twice in one object, at any depth, is
// invalid_json naming it by its path; equal names in different objects are not
// duplicates.
func TestDecodeDuplicateNames(t *testing.T) {
	many := `{`
	for i := range 40 {
		many += `"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`
	}
	for in, want := range map[string]string{
		`{"a":1,"b":2}`:                        "",
		`{"a":1,"a":2}`:                        "a",
		`{"a":{"x":1,"x":2}}`:                  "a.x",
		`{"a":[{"x":1},{"x":2}],"b":1}`:        "",
		`{"a":[{"x":1,"y":[1,2],"x":3}]}`:      "a.x",
		`{"a":{"b":{}},"c":{"b":1},"a":0}`:     "a",
		`{"reward":{"agent_credit":1},"r":{}}`: "",
		`[1,2,{"k":1,"k":1}]`:                  "k",
		`{"a":"x,\"a\":1","b":2}`:              "",
		`{"a":1,"\u0061":2}`:                   "a",
		`{"a":{"b":1},"c":[{"b":1},{"b":2}],"d":{"e":{"f":1,"f":2}}}`: "d.e.f",
		many + `"kaa":2}`:             "kaa",
		many + `"zz":2}`:              "",
		`{"a":"\\","a":1}`:            "a",
		`{"0":{"1":[{"2":1,"2":2}]}}`: "0.1.2",
	} {
		var v any
		err := Decode([]byte(in), &v)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidJSON || e.Field != want ||
			e.Message != fmt.Sprintf("field %q appears more than once", want) {
			t.Errorf("%s: got %v, want invalid_json naming %q", in, err, want)
		}
	}
}

// TestDecodeRefusals: each kind of fault is refused with its code, the member
// at fault and the message the API sends (docs/api.md quotes some of them).
func TestDecodeRefusals(t *testing.T) {
	type target struct {
		Name   string `json:"name"`
		Count  int    `json:"count"`
		Nested struct {
			Flag bool `json:"flag"`
		} `json:"nested"`
		Payload map[string]any `json:"payload"`
	}
	for _, tc := range []struct {
		in   string
		want Error
	}{
		{`{"name":"\ud800"}`, Error{CodeInvalidJSON, "name", `field "name" holds the lone surrogate \ud800; request bodies must be I-JSON (RFC 7493)`}},
		{"{\"name\":\"a\xffb\"}", Error{CodeInvalidJSON, "name", `field "name" holds invalid UTF-8; request bodies must be I-JSON (RFC 7493)`}},
		{`{"\uFDD0":1}`, Error{CodeInvalidJSON, "\ufffd", `the name of field "` + "\ufffd" + `" holds the noncharacter U+FDD0; request bodies must be I-JSON (RFC 7493)`}},
		{`{"payload":{"legs":[{"note":"\udc00"}]}}`, Error{CodeInvalidJSON, "payload.legs.note", `field "payload.legs.note" holds the lone surrogate \udc00; request bodies must be I-JSON (RFC 7493)`}},
		{`"\ud800"`, Error{CodeInvalidJSON, "", `request body holds the lone surrogate \ud800; request bodies must be I-JSON (RFC 7493)`}},
		{`{"name":"a","name":"b"}`, Error{CodeInvalidJSON, "name", `field "name" appears more than once`}},
		{``, Error{CodeInvalidJSON, "", "request body is empty; send a JSON object"}},
		{`{"name":`, Error{CodeInvalidJSON, "", "request body ends in the middle of a JSON value"}},
		{`{}{}`, Error{CodeInvalidJSON, "", "request body holds more than one JSON value"}},
		{`{"nested":{"bogus":1}}`, Error{CodeUnknownField, "bogus", `unknown field "bogus"`}},
		{`{"nested":{"flag":"yes"}}`, Error{CodeInvalidField, "nested.flag", `field "nested.flag" must be a boolean, not string`}},
		{`{"count":1.5}`, Error{CodeInvalidField, "count", `field "count" must be an integer in range, not number 1.5`}},
		{`[1]`, Error{CodeInvalidJSON, "", "request body must be an object, not array"}},
	} {
		var v target
		err := Decode([]byte(tc.in), &v)
		var e *Error
		if !errors.As(err, &e) || *e != tc.want {
			t.Errorf("%q: got %#v, want %#v", tc.in, err, tc.want)
		}
	}
	var v target
	if err := Decode([]byte(`{}`), v); err == nil || errors.As(err, new(*Error)) {
		t.Errorf("a destination that is not a pointer: %v, want a plain error", err)
	}
}
