package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// A bundle is a JSON value, and any faithful copy of it must verify: one that a
// tool pretty-printed, reordered or re-escaped holds the same values, so it has
// the same canonical form (RFC 8785). The helpers here re-serialise a bundle the
// ways real tools do, so that every bundle test can run on such copies.

// jsonNode is a JSON value with its object members in document order and its
// numbers as written, so that a re-serialisation changes only what it means to.
type jsonNode struct {
	kind  byte // '{', '[', '"' (string), '0' (number) or 'l' (true, false, null)
	text  string
	keys  []string    // object member names, in order
	elems []*jsonNode // object member values or array elements, in order
}

// decodeOrdered parses one JSON document into a jsonNode tree.
func decodeOrdered(b []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return n, nil
}

func decodeNode(dec *json.Decoder) (*jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jsonNode{kind: byte(v)}
		for dec.More() {
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			e, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{kind: '"', text: v}, nil
	case json.Number:
		return &jsonNode{kind: '0', text: v.String()}, nil
	case bool:
		return &jsonNode{kind: 'l', text: strconv.FormatBool(v)}, nil
	case nil:
		return &jsonNode{kind: 'l', text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// member returns the value of the object member key, or nil.
func (n *jsonNode) member(key string) *jsonNode {
	if i := slices.Index(n.keys, key); i >= 0 && n.kind == '{' {
		return n.elems[i]
	}
	return nil
}

type keyOrder int

const (
	keysAsWritten keyOrder = iota
	keysReversed
	keysShuffled // needs rnd
)

type escapeMode int

const (
	escapeMinimal  escapeMode = iota // only what JSON requires, UTF-8 as it is
	escapeNonASCII                   // every rune above U+007F as \uXXXX, astral ones as surrogate pairs (json.tool's default)
	escapeAll                        // every rune as \uXXXX, or a short form where one exists
	escapeRandom                     // each rune by a choice of rnd among the forms above
)

type numberForm int

const (
	numbersAsWritten numberForm = iota
	numbersExponent             // every number as a float64 in exponent form, as tools that hold numbers as doubles write them
)

// reencoding is one way of writing a JSON value back out.
type reencoding struct {
	indent  string // one level of indentation; "" writes one line
	colon   string // written after each member name's colon
	comma   string // written after each comma when not indenting
	keys    keyOrder
	escape  escapeMode
	numbers numberForm
	upper   bool       // \u escapes in uppercase hex
	noise   bool       // random whitespace between every token; needs rnd
	rnd     *rand.Rand // for keysShuffled, escapeRandom and noise
}

func (r reencoding) encode(n *jsonNode) []byte {
	var b bytes.Buffer
	r.write(&b, n, 0)
	b.WriteByte('\n')
	return b.Bytes()
}

func (r reencoding) space(b *bytes.Buffer) {
	if !r.noise {
		return
	}
	for range r.rnd.IntN(3) {
		b.WriteByte(" \t\n\r"[r.rnd.IntN(4)])
	}
}

func (r reencoding) newline(b *bytes.Buffer, depth int) {
	if r.indent == "" {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(r.indent)
	}
}

func (r reencoding) write(b *bytes.Buffer, n *jsonNode, depth int) {
	r.space(b)
	switch n.kind {
	case '{', '[':
		b.WriteByte(n.kind)
		order := make([]int, len(n.elems))
		for i := range order {
			order[i] = i
		}
		if n.kind == '{' {
			switch r.keys {
			case keysReversed:
				slices.Reverse(order)
			case keysShuffled:
				r.rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
		}
		for k, i := range order {
			if k > 0 {
				b.WriteByte(',')
				if r.indent == "" {
					b.WriteString(r.comma)
				}
			}
			r.newline(b, depth+1)
			if n.kind == '{' {
				r.space(b)
				r.writeString(b, n.keys[i])
				r.space(b)
				b.WriteByte(':')
				b.WriteString(r.colon)
			}
			r.write(b, n.elems[i], depth+1)
		}
		if len(order) > 0 {
			r.newline(b, depth)
		}
		r.space(b)
		if n.kind == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	case '"':
		r.writeString(b, n.text)
	case '0':
		b.WriteString(r.number(n.text))
	default:
		b.WriteString(n.text)
	}
	r.space(b)
}

// number writes a number token in the chosen form. In exponent form it is the
// nearest float64, which is the value RFC 8785 canonicalises.
func (r reencoding) number(tok string) string {
	if r.numbers != numbersExponent {
		return tok
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		panic(fmt.Sprintf("number %s: %v", tok, err)) // the input came from a valid bundle
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

func (r reencoding) writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, c := range s {
		mode := r.escape
		if mode == escapeRandom {
			mode = escapeMode(r.rnd.IntN(3))
		}
		switch {
		case mode == escapeAll:
			r.writeEscaped(b, c)
		case c == '"' || c == '\\' || c < 0x20:
			r.writeEscaped(b, c)
		case mode == escapeNonASCII && c > 0x7f:
			r.writeU(b, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
}

// writeEscaped writes c as an escape: a short form where JSON has one (\/ for
// the solidus too), otherwise \uXXXX.
func (r reencoding) writeEscaped(b *bytes.Buffer, c rune) {
	short := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}
	if s, ok := short[c]; ok && (r.rnd == nil || r.rnd.IntN(2) == 0) {
		b.WriteString(s)
		return
	}
	r.writeU(b, c)
}

func (r reencoding) writeU(b *bytes.Buffer, c rune) {
	format := `\u%04x`
	if r.upper {
		format = `\u%04X`
	}
	if c > 0xffff {
		hi, lo := utf16.EncodeRune(c)
		fmt.Fprintf(b, format+format, hi, lo)
		return
	}
	fmt.Fprintf(b, format, c)
}

// reencodings are the fixed ways every bundle test re-serialises its bundles.
var reencodings = []struct {
	name string
	r    reencoding
}{
	{"json.tool", reencoding{indent: "    ", colon: " ", escape: escapeNonASCII}},
	{"indented", reencoding{indent: "  ", colon: " "}},
	{"spaced", reencoding{colon: " ", comma: " "}},
	{"keys reversed", reencoding{keys: keysReversed}},
	{"non-ASCII escaped", reencoding{escape: escapeNonASCII, upper: true}},
	{"everything escaped", reencoding{escape: escapeAll}},
	{"numbers as exponents", reencoding{numbers: numbersExponent}},
	{"all at once", reencoding{indent: "\t", colon: "  ", keys: keysReversed, escape: escapeNonASCII, numbers: numbersExponent}},
}

type reserialized struct {
	name string
	b    []byte
}

// reserialize returns the bundle as written and re-serialised every way in
// reencodings.
func reserialize(t testing.TB, bundle []byte) []reserialized {
	t.Helper()
	n, err := decodeOrdered(bundle)
	if err != nil {
		t.Fatalf("decode bundle for re-serialising: %v", err)
	}
	out := []reserialized{{"as written", bundle}}
	for _, re := range reencodings {
		b := re.r.encode(n)
		if !json.Valid(b) {
			t.Fatalf("%s: re-serialised bundle is not JSON:\n%s", re.name, b)
		}
		out = append(out, reserialized{re.name, b})
	}
	return out
}

// TestReencodingsPreserveValues guards the helper itself: every re-serialisation
// decodes to the same values as the original, and differs from it in bytes.
func TestReencodingsPreserveValues(t *testing.T) {
	in := []byte(`{"a":"é 🚀 \u2028 </>&\"\\\u0001/","b":[1,-0.5,1e21,9007199254740993,{}],"c":{"z":true,"y":null,"x":[]}}`)
	var want any
	json.Unmarshal(in, &want)
	for _, rs := range reserialize(t, in)[1:] {
		var got any
		if err := json.Unmarshal(rs.b, &got); err != nil {
			t.Fatalf("%s: %v", rs.name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s changed the values:\n got %v\nwant %v", rs.name, got, want)
		}
		if bytes.Equal(bytes.TrimSpace(rs.b), in) {
			t.Errorf("%s left the bytes as they were", rs.name)
		}
		canonIn, err1 := canonicalJSON(in)
		canonOut, err2 := canonicalJSON(rs.b)
		if err1 != nil || err2 != nil || !bytes.Equal(canonIn, canonOut) {
			t.Errorf("%s: canonical forms differ (%v, %v):\n%s\n%s", rs.name, err1, err2, canonIn, canonOut)
		}
	}
	for _, rs := range reserialize(t, in) {
		if rs.name == "non-ASCII escaped" && (bytes.Contains(rs.b, []byte("🚀")) || !bytes.Contains(rs.b, []byte(`\uD83D\uDE80`))) {
			t.Errorf("astral rune not written as a surrogate pair: %s", rs.b)
		}
		if !utf8.Valid(rs.b) {
			t.Errorf("%s: not UTF-8", rs.name)
		}
	}
}

// eachCopy runs check as a subtest on the bundle as written and on each of its
// re-serialisations.
func eachCopy(t *testing.T, bundle []byte, check func(t *testing.T, b []byte)) {
	t.Helper()
	for _, rs := range reserialize(t, bundle) {
		t.Run(rs.name, func(t *testing.T) { check(t, rs.b) })
	}
}
