package projections

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// appendStringBytewise is appendString without the eight-byte scan: each
// byte is looked up in jsonSafe. BenchmarkAppendString compares the two.
func appendStringBytewise(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
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

// missionStrings are the strings of a mission's record: its id, title,
// description, publisher, publisher kind, issuer, domain, subnet, state and
// timestamps.
var missionStrings = []string{
	"019b0000-0000-7000-8000-000000000001", "Escort the convoy",
	"Escort the grain convoy from the northern depot to the river market and report any road that is no longer passable.",
	"genesis", "planetary_government", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
	"security", "genesis", "open", "2026-11-28T18:45:51.123456Z", "2026-11-28T18:45:51.123456Z",
}

// BenchmarkAppendString compares appendString's eight-byte scan with a loop
// that looks up each byte, on a mission's strings and on a 1,000-byte
// description. Run with -count to alternate them:
//
//	go test ./projections -run '^$' -bench AppendString -count 6
func BenchmarkAppendString(b *testing.B) {
	long := strings.Repeat("The convoy leaves at dawn, ", 40)[:1000]
	for _, c := range []struct {
		name string
		strs []string
	}{{"mission", missionStrings}, {"text=1000", []string{long}}} {
		for _, impl := range []struct {
			name string
			f    func([]byte, string) []byte
		}{{"scan=word", appendString}, {"scan=byte", appendStringBytewise}} {
			b.Run(fmt.Sprintf("%s/%s", c.name, impl.name), func(b *testing.B) {
				buf := make([]byte, 0, 4096)
				for b.Loop() {
					buf = buf[:0]
					for _, s := range c.strs {
						buf = impl.f(buf, s)
					}
				}
			})
		}
	}
}

// TestAppendStringBytewise holds the benchmark's reference to appendString's
// bytes, so that the two compared do the same work.
func TestAppendStringBytewise(t *testing.T) {
	for _, s := range append(missionStrings, "a\"b\n\x01\u2028\xff<>&é", strings.Repeat("x", 17)+"\t") {
		if got, want := string(appendStringBytewise(nil, s)), string(appendString(nil, s)); got != want {
			t.Errorf("%q: bytewise %s, appendString %s", s, got, want)
		}
	}
}
