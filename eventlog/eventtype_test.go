package eventlog

import (
	"regexp"
	"testing"
)

// The regular expressions the event type rules were first written as; dotted
// must agree with them on every string.
var (
	typeRegexp       = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)+$`)
	typePrefixRegexp = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)
)

// FuzzDotted holds dotted to the regular expressions of an event type (two or
// more segments) and of a type filter's prefix (one or more), and ValidType
// to the type's 128-byte bound.
func FuzzDotted(f *testing.F) {
	for _, s := range []string{"", ".", "a", "a.", ".a", "a.b", "a..b", "mission.created", "node.genesis",
		"A.b", "a.b-c", "a_1.b_2.c3", "a.b.", "é.b", "a.b\n", "a\x00.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := dotted(s, 2), typeRegexp.MatchString(s); got != want {
			t.Errorf("dotted(%q, 2) = %v, the type pattern says %v", s, got, want)
		}
		if got, want := dotted(s, 1), typePrefixRegexp.MatchString(s); got != want {
			t.Errorf("dotted(%q, 1) = %v, the prefix pattern says %v", s, got, want)
		}
		if got, want := ValidType(s), len(s) <= 128 && typeRegexp.MatchString(s); got != want {
			t.Errorf("ValidType(%q) = %v, want %v", s, got, want)
		}
	})
}
