package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The appenders below write JSON values byte for byte as a json.Encoder with
// SetEscapeHTML(false) writes them, for the types whose reflection-based
// encoding is a measurable share of a write (a mission's stored value on the
// log's sequencer, its record in every answer). The fuzz tests hold them to
// encoding/json; anything they cannot write exactly (a payload that is not
// valid JSON) they refuse, and the caller falls back to encoding/json, which
// then reports the error as before.

// jsonAppender is a value that can append its own JSON encoding. ok is false,
// and dst unchanged in length, when it cannot be sure to match encoding/json;
// the caller then encodes the value with encoding/json.
type jsonAppender interface {
	AppendJSON(dst []byte) ([]byte, bool)
}

// encodeJSON appends v with its appender when it has one that succeeds, and
// with encoding/json otherwise.
func encodeJSON(dst []byte, v any) ([]byte, error) {
	if a, ok := v.(jsonAppender); ok {
		if out, ok := a.AppendJSON(dst); ok {
			return out, nil
		}
	}
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// appendKey appends a member name with its colon, after a comma unless it is
// the object's first member. Names are the struct tags' own: printable ASCII
// with nothing to escape.
func appendKey(dst []byte, name string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// jsonSafe holds the ASCII bytes a JSON string carries as they are when HTML
// escaping is off: every printable byte but '"' and '\\'.
var jsonSafe = func() (s [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		s[b] = b != '"' && b != '\\'
	}
	return s
}()

// safeWord reports whether each of the eight bytes of w is in jsonSafe: none
// is a control character (below 0x20), '"', '\\' or outside ASCII (0x80 and
// up). Each test is the exact "has a byte below n" bit trick, which may flag
// the wrong byte of a word but never misses one, nor flags a word with none.
func safeWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := func(x uint64, n uint64) uint64 { return (x - ones*n) & ^x & highs }
	return (w&highs)|below(w, 0x20)|below(w^(ones*'"'), 1)|below(w^(ones*'\\'), 1) == 0
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json writes it without
// HTML escaping: '"' and '\\' escaped, control characters as \b, \f, \n, \r,
// \t or \u00xx (lowercase hex), U+2028 and U+2029 as \u2028 and \u2029 (they
// end a line in JavaScript), each byte of invalid UTF-8 as \ufffd, and
// everything else, '<', '>' and '&' included, as is.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while they are all safe ASCII, as most text
		// is: BenchmarkAppendString shows the gain over a byte at a time, on
		// a mission's strings and on long text.
		for i+8 <= len(s) && safeWord(binary.LittleEndian.Uint64([]byte(s[i:i+8]))) {
			i += 8
		}
		if i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
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
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendNullableString appends *s, or null for a nil pointer.
func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendString(dst, *s)
}

// appendStrings appends ss as an array of strings; a nil slice is null, an
// empty one [].
func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendInt appends n in decimal.
func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// appendRaw appends a json.RawMessage as encoding/json writes it: null when
// nil, otherwise compacted (json.Compact, which is what encoding/json applies
// to a Marshaler's output when HTML escaping is off). ok is false when raw is
// not valid JSON, empty (but not nil) included, which encoding/json refuses
// with an error.
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	n := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst[:n], false
	}
	return buf.Bytes(), true
}
