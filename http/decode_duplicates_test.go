package http

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestDuplicateKey(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":2}`:                        "",
		`{"a":1,"a":2}`:                        "a",
		`{"a":{"x":1,"x":2}}`:                  "a.x",
		`{"a":[{"x":1},{"x":2}],"b":1}`:        "",
		`{"a":[{"x":1,"y":[1,2],"x":3}]}`:      "a.x",
		`{"a":{"b":{}},"c":{"b":1},"a":0}`:     "a",
		`{"reward":{"agent_credit":1},"r":{}}`: "",
		`[1,2,{"k":1,"k":1}]`:                  "k",
		`{"a":`:                                "",
	} {
		got, dup := duplicateKey([]byte(in))
		if got != want || dup != (want != "") {
			t.Errorf("%s: got %q %v, want %q", in, got, dup, want)
		}
	}
}

func TestDuplicateKeyEdges(t *testing.T) {
	many := `{`
	for i := range 40 {
		many += `"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`
	}
	for in, want := range map[string]string{
		`{"a":"x,\"a\":1","b":2}`: "",
		`{"a":1,"\u0061":2}`:      "a",
		`{"a":{"b":1},"c":[{"b":1},{"b":2}],"d":{"e":{"f":1,"f":2}}}`: "d.e.f",
		many + `"kaa":2}`:  "kaa",
		many + `"zz":2}`:   "",
		`{"a":"\\","a":1}`: "a",
	} {
		got, dup := duplicateKey([]byte(in))
		if got != want || dup != (want != "") {
			t.Errorf("%s: got %q %v, want %q", in, got, dup, want)
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":2,"c":3}]}}`))
	f.Add([]byte(`{"a":"\"","b":1}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, dup := duplicateKey(in) // must not panic or hang on any input
		if !json.Valid(in) {
			return
		}
		want, wantDup := duplicateKeyReference(in)
		if !utf8.Valid(in) { // encoding/json turns invalid bytes into U+FFFD in the path
			got, want = "", ""
		}
		if got != want || dup != wantDup {
			t.Fatalf("%q: got %q %v, reference %q %v", in, got, dup, want, wantDup)
		}
	})
}

// duplicateKeyReference finds the first duplicate key with encoding/json's
// tokenizer, slowly and plainly.
func duplicateKeyReference(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
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
