package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/civnode/civnode/internal/ijson"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Shared by the fuzz targets of this package: the requests of the docs' curl
// examples as seeds, so that the corpus starts from what clients are told to
// send, and the checks every decoded request body must pass.

// docRequest is one curl example of docs/*.md.
type docRequest struct {
	path  string // /v1/…, without the query
	query string // the raw query, without "?"
	body  string // the -d body, "" when none
}

var (
	docNodeURL = regexp.MustCompile(`\$NODE(/[^\s"']*)`)
	docBody    = regexp.MustCompile(`(?:-d|--data|--data-binary) '([^']*)'`)
)

// docRequests reads the curl examples of docs/*.md. A body in single quotes
// is what the shell sends, byte for byte.
func docRequests(tb testing.TB) []docRequest {
	tb.Helper()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no docs to take seeds from: %v", err)
	}
	var out []docRequest
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ") // continued command lines
		for line := range strings.Lines(text) {
			if !strings.Contains(line, "curl ") {
				continue
			}
			m := docNodeURL.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			path, query, _ := strings.Cut(m[1], "?")
			r := docRequest{path: path, query: query}
			if bm := docBody.FindStringSubmatch(line); bm != nil {
				r.body = bm[1]
			}
			out = append(out, r)
		}
	}
	return out
}

// checkClientError holds that err, the refusal of a request body, is one the
// client can act on: a 400 with a body code, a message, and a field that
// names what the client sent.
func checkClientError(t *testing.T, body []byte, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%q: not a client error: %v", body, err)
	}
	if e.Status != http.StatusBadRequest || e.Message == "" {
		t.Fatalf("%q: error %#v, want a 400 with a message", body, e)
	}
	if !isIJSONText(e.Field) {
		t.Fatalf("%q: field %q is not I-JSON text", body, e.Field)
	}
	switch e.Code {
	case codeInvalidJSON:
		return
	case codeUnknownField, codeInvalidField:
	default:
		t.Fatalf("%q: code %q, want invalid_json, unknown_field or invalid_field", body, e.Code)
	}
	// The body is I-JSON here (ijson.Check passed), so its names can be listed.
	// A field may be "" only when the body has a member of that name.
	names, paths := memberNames(t, body)
	switch {
	case e.Code == codeUnknownField && !names[e.Field]:
		t.Fatalf("%q: unknown field %q is no member of the body (members %v)", body, e.Field, keys(names))
	case e.Code == codeInvalidField && !paths[e.Field]:
		t.Fatalf("%q: invalid field %q is no member path of the body (paths %v)", body, e.Field, keys(paths))
	}
}

// isIJSONText reports whether s may stand in an I-JSON document as it is:
// valid UTF-8, which encoding/json would otherwise mend, and no character
// that the codec refuses.
func isIJSONText(s string) bool {
	b, err := json.Marshal(s)
	return err == nil && utf8.ValidString(s) && ijson.Check(b) == nil
}

// memberNames lists, by encoding/json's tokenizer, every member name of body
// at any depth, and every member's path as the API names one: the names on
// the way joined by dots, array indexes left out.
func memberNames(t *testing.T, body []byte) (names, paths map[string]bool) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%q: passed ijson.Check, but encoding/json refuses it: %v", body, err)
	}
	names, paths = map[string]bool{}, map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				names[k], paths[p] = true, true
				walk(p, x)
			}
		case []any:
			for _, x := range v {
				walk(prefix, x)
			}
		}
	}
	walk("", v)
	return names, paths
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// encodeInput encodes a decoded request value with null for nil slices and
// maps, so that what was null stays null.
func encodeInput(t *testing.T, v any) []byte {
	t.Helper()
	out, err := jsonv2.Marshal(v, jsonv2.FormatNilSliceAsNull(true), jsonv2.FormatNilMapAsNull(true))
	if err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return out
}

// checkRoundTrip holds, for a body that decoded into v without error, that
// decoding lost nothing and invented nothing the client could see: every
// member the body holds comes out of v with the same value (members the
// body left out come out as their zero or null), and v's own encoding is a
// body the decoder accepts and decodes to the same value again.
func checkRoundTrip(t *testing.T, body []byte, v any, fresh func() any) {
	t.Helper()
	out := encodeInput(t, v)
	if trimmed := bytes.TrimSpace(body); !bytes.Equal(trimmed, []byte("null")) {
		if where := notKeptIn(t, trimmed, out); where != "" {
			t.Fatalf("%q decoded to %s: %s", body, out, where)
		}
	}
	again := fresh()
	if err := decodeBody(out, again); err != nil {
		t.Fatalf("%q decoded to %s, which the decoder refuses: %v", body, out, err)
	}
	if out2 := encodeInput(t, again); !bytes.Equal(canonical(t, out), canonical(t, out2)) {
		t.Fatalf("%q: decoding is not stable: %s, then %s", body, out, out2)
	}
}

// canonical is b in RFC 8785 form, or compacted when it has a number
// canonical form cannot hold.
func canonical(t *testing.T, b []byte) []byte {
	t.Helper()
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Canonicalize(); err != nil {
		v = jsontext.Value(bytes.Clone(b))
		if err := v.Compact(); err != nil {
			t.Fatalf("%s is not JSON: %v", b, err)
		}
	}
	return v
}

// notKeptIn says where a member of body, a JSON text, has no equal in out,
// or "" when out holds all of body: the same members with the same values,
// numbers compared by value, except that an empty value may be left out
// (omitempty). out may hold more members.
func notKeptIn(t *testing.T, body, out []byte) string {
	t.Helper()
	parse := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s is not JSON: %v", b, err)
		}
		return v
	}
	var walk func(path string, in, got any) string
	walk = func(path string, in, got any) string {
		switch in := in.(type) {
		case map[string]any:
			g, ok := got.(map[string]any)
			if !ok {
				return fmt.Sprintf("%s: object became %v", path, got)
			}
			for k, x := range in {
				y, ok := g[k]
				if !ok && !emptyJSON(x) { // omitempty drops only an empty value
					return fmt.Sprintf("%s.%s: member dropped", path, k)
				}
				if !ok {
					continue
				}
				if w := walk(path+"."+k, x, y); w != "" {
					return w
				}
			}
		case []any:
			g, ok := got.([]any)
			if !ok || len(g) != len(in) {
				return fmt.Sprintf("%s: array became %v", path, got)
			}
			for i := range in {
				if w := walk(fmt.Sprintf("%s[%d]", path, i), in[i], g[i]); w != "" {
					return w
				}
			}
		case json.Number:
			g, ok := got.(json.Number)
			if !ok || !sameNumber(string(in), string(g)) {
				return fmt.Sprintf("%s: number %s became %v", path, in, got)
			}
		default: // string, bool, nil
			if in != got {
				return fmt.Sprintf("%s: %#v became %#v", path, in, got)
			}
		}
		return ""
	}
	return walk("$", parse(body), parse(out))
}

// emptyJSON reports whether v is what omitempty leaves out: null, "", {}
// or [].
func emptyJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// sameNumber compares two JSON numbers by value: as written, or as the
// float64 both denote when both are finite.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}
