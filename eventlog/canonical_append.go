package eventlog

import "unicode/utf8"

// CanonicalAppender is a payload that writes its own RFC 8785 form, so that
// Canonicalize can skip encoding/json and the JCS re-parse of its output: for a
// payload encoded on every request (mission.created) that pair costs more than
// the rest of the encoding.
//
// AppendCanonical appends to dst exactly the bytes Canonicalize would otherwise
// produce (json.Marshal, then the log's JCS encoder) and reports true, or
// reports false for a value it cannot write so exactly (a string that is not
// valid UTF-8, an integer beyond ±2^53, a field it cannot vouch for), in which
// case Canonicalize takes the encoding/json path and the bytes appended are
// discarded. Canonicalize trusts what it returns with true: it is not parsed
// again, so an implementation is held to the slow path by a test of its own.
type CanonicalAppender interface {
	AppendCanonical(dst []byte) ([]byte, bool)
}

// AppendCanonicalString appends s as a JSON string in RFC 8785 form, byte for
// byte as the log's JCS encoder writes the string encoding/json made of s: only
// '"', '\\' and control characters are escaped (\b \t \n \f \r by their short
// forms, the others as \u00xx in lowercase hex), and everything else, U+2028,
// U+2029, '<', '>', '&' and DEL included, is written as it is. It reports false,
// appending nothing, for s that is not valid UTF-8: encoding/json replaces such
// bytes with U+FFFD, and a CanonicalAppender leaves that to the slow path rather
// than repeat it.
func AppendCanonicalString(dst []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return dst, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return appendJCSString(dst, s), true
		}
	}
	// Nothing to escape, as in most strings: one copy.
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}
