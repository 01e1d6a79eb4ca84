package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// canonicalJSON returns the RFC 8785 (JCS) serialisation of one JSON value.
//
// It is the append path's hottest step after signing, so it is a single pass over
// the input that writes canonical bytes directly, sorting each object's members
// by their UTF-16 code units as it closes. Number formatting (ECMAScript's
// Number.prototype.toString) is gowebpki/jcs's NumberToJSON, except for plain
// integers of up to 15 digits, which that formatting leaves unchanged. Documents
// nested deeper than maxFastDepth are handed to gowebpki/jcs whole, which bounds
// the cost of this function's per-level member reordering. FuzzCanonicalJSON holds
// it byte-for-byte equal to jcs.Transform, accepting and rejecting alike.
func canonicalJSON(in []byte) ([]byte, error) {
	p := jcsParser{in: in}
	p.skipSpace()
	out, err := p.value(make([]byte, 0, len(in)), 0)
	if errors.Is(err, errTooDeep) {
		return jcs.Transform(in)
	}
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(in) {
		return nil, fmt.Errorf("data after the JSON value at byte %d", p.i)
	}
	return out, nil
}

const maxFastDepth = 32

type jcsParser struct {
	in []byte
	i  int
}

func (p *jcsParser) skipSpace() {
	for p.i < len(p.in) {
		switch p.in[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jcsParser) errorf(format string, args ...any) error {
	return fmt.Errorf("json at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// value appends the canonical form of the value at p.i (after any space).
func (p *jcsParser) value(dst []byte, depth int) ([]byte, error) {
	if p.i >= len(p.in) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.in[p.i]; {
	case c == '{':
		if depth >= maxFastDepth {
			return nil, errTooDeep
		}
		return p.object(dst, depth+1)
	case c == '[':
		if depth >= maxFastDepth {
			return nil, errTooDeep
		}
		return p.array(dst, depth+1)
	case c == '"':
		dst, _, err := p.str(dst, false)
		return dst, err
	default:
		return p.scalar(dst)
	}
}

type jcsMember struct {
	key        string
	ascii      bool
	start, end int // span of `"key":value` in dst
}

func (p *jcsParser) object(dst []byte, depth int) ([]byte, error) {
	p.i++ // {
	start := len(dst)
	var members []jcsMember
	p.skipSpace()
	if p.i < len(p.in) && p.in[p.i] == '}' {
		p.i++
		return append(dst, '{', '}'), nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.in) || p.in[p.i] != '"' {
			return nil, p.errorf("want an object key")
		}
		m := jcsMember{start: len(dst)}
		var err error
		if dst, m.key, err = p.str(dst, true); err != nil {
			return nil, err
		}
		m.ascii = isASCII(m.key)
		p.skipSpace()
		if p.i >= len(p.in) || p.in[p.i] != ':' {
			return nil, p.errorf("want ':'")
		}
		p.i++
		p.skipSpace()
		dst = append(dst, ':')
		if dst, err = p.value(dst, depth); err != nil {
			return nil, err
		}
		m.end = len(dst)
		members = append(members, m)
		more, err := p.separator('}', "object")
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	slices.SortFunc(members, compareMembers)
	for k := 1; k < len(members); k++ {
		if members[k-1].key == members[k].key {
			return nil, p.errorf("duplicate key %q", members[k].key)
		}
	}
	// Members were written back to back in input order; rewrite them sorted,
	// comma-separated and braced.
	body := slices.Clone(dst[start:])
	dst = append(dst[:start], '{')
	for k, m := range members {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, body[m.start-start:m.end-start]...)
	}
	return append(dst, '}'), nil
}

// compareMembers orders keys by UTF-16 code units (RFC 8785 §3.2.3). For ASCII
// keys that is byte order.
func compareMembers(a, b jcsMember) int {
	if a.ascii && b.ascii {
		return bytes.Compare([]byte(a.key), []byte(b.key))
	}
	return slices.Compare(utf16.Encode([]rune(a.key)), utf16.Encode([]rune(b.key)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (p *jcsParser) array(dst []byte, depth int) ([]byte, error) {
	p.i++ // [
	dst = append(dst, '[')
	p.skipSpace()
	if p.i < len(p.in) && p.in[p.i] == ']' {
		p.i++
		return append(dst, ']'), nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			dst = append(dst, ',')
		}
		p.skipSpace()
		var err error
		if dst, err = p.value(dst, depth); err != nil {
			return nil, err
		}
		more, err := p.separator(']', "array")
		if err != nil {
			return nil, err
		}
		if !more {
			return append(dst, ']'), nil
		}
	}
}

// separator consumes what follows a member or element: a ',' (another follows)
// or the closing byte (the container ends).
func (p *jcsParser) separator(closing byte, what string) (more bool, err error) {
	p.skipSpace()
	switch {
	case p.i >= len(p.in):
		return false, p.errorf("unterminated %s", what)
	case p.in[p.i] == ',':
		p.i++
		return true, nil
	case p.in[p.i] == closing:
		p.i++
		return false, nil
	}
	return false, p.errorf("want ',' or '%c'", closing)
}

// str appends the canonical form of the string at p.i and, if want is set,
// returns its decoded value. A string with no escapes and valid UTF-8 is copied
// as it is, which is its canonical form.
func (p *jcsParser) str(dst []byte, want bool) ([]byte, string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.in) {
		c := p.in[p.i]
		if c == '"' {
			raw := p.in[start:p.i]
			if !utf8.Valid(raw) {
				break
			}
			p.i++
			dst = append(append(append(dst, '"'), raw...), '"')
			if want {
				return dst, string(raw), nil
			}
			return dst, "", nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	p.i = start
	s, err := p.decodeString()
	if err != nil {
		return nil, "", err
	}
	return appendJCSString(dst, s), s, nil
}

// decodeString decodes the string body at p.i with its escapes, rejecting what
// RFC 8785 rejects: invalid UTF-8, raw control characters and unpaired surrogates.
func (p *jcsParser) decodeString() (string, error) {
	var b []byte
	for {
		if p.i >= len(p.in) {
			return "", p.errorf("unterminated string")
		}
		c := p.in[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c == '\\':
			if p.i+1 >= len(p.in) {
				return "", p.errorf("unterminated escape")
			}
			e := p.in[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 {
						return "", p.errorf("unpaired low surrogate")
					}
					if p.i+1 >= len(p.in) || p.in[p.i] != '\\' || p.in[p.i+1] != 'u' {
						return "", p.errorf("unpaired high surrogate")
					}
					p.i += 2
					lo, err := p.hex4()
					if err != nil {
						return "", err
					}
					if lo < 0xDC00 || lo > 0xDFFF {
						return "", p.errorf("invalid low surrogate")
					}
					r = utf16.DecodeRune(r, lo)
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", p.errorf("invalid escape")
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.in[p.i:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf("invalid UTF-8")
			}
			b = append(b, p.in[p.i:p.i+size]...)
			p.i += size
		}
	}
}

func (p *jcsParser) hex4() (rune, error) {
	if p.i+4 > len(p.in) {
		return 0, p.errorf("short \\u escape")
	}
	var r rune
	for _, c := range p.in[p.i : p.i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, p.errorf("bad \\u escape")
		}
	}
	p.i += 4
	return r, nil
}

// appendJCSString writes s as RFC 8785 requires: only '"', '\\' and control
// characters are escaped, the five with short forms by them, the rest as \u00xx.
func appendJCSString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// scalar appends a literal or number. The token ends at a structural character,
// whitespace or the end of input, as in gowebpki/jcs.
func (p *jcsParser) scalar(dst []byte) ([]byte, error) {
	start := p.i
	for p.i < len(p.in) {
		c := p.in[p.i]
		if c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
		p.i++
	}
	tok := p.in[start:p.i]
	switch string(tok) {
	case "true", "false", "null":
		return append(dst, tok...), nil
	case "":
		return nil, p.errorf("missing value")
	}
	if plainInteger(tok) {
		return append(dst, tok...), nil
	}
	if !validNumber(tok) {
		return nil, p.errorf("invalid literal or number")
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return nil, p.errorf("number out of range")
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return nil, err
	}
	return append(dst, s...), nil
}

// plainInteger reports an integer of at most 15 digits without a leading zero or
// a minus zero: ECMAScript formats such a number exactly as it is written.
func plainInteger(tok []byte) bool {
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' {
		return len(tok) == 1 && tok[0] == '0'
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validNumber is RFC 8259's number grammar.
func validNumber(tok []byte) bool {
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	switch {
	case i < len(tok) && tok[i] == '0':
		i++
	case i < len(tok) && tok[i] >= '1' && tok[i] <= '9':
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		n := i
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
		if i == n {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		n := i
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
		if i == n {
			return false
		}
	}
	return i == len(tok)
}
