package eventlog

import (
	"encoding/json"
	"strings"
	"testing"
)

// slowCanonical is Canonicalize's encoding/json path: what a CanonicalAppender
// must equal.
func slowCanonical(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := CanonicalObject(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fixedAppender writes b, or declines when b is nil.
type fixedAppender struct {
	A string `json:"a"`
	b []byte
}

func (f fixedAppender) AppendCanonical(dst []byte) ([]byte, bool) {
	if f.b == nil {
		return append(dst, "partial"...), false
	}
	return append(dst, f.b...), true
}

// TestCanonicalizeAppender: an appender's bytes are taken as they are (they are
// not what encoding/json would make of the value), and one that declines is
// encoded by encoding/json, whatever it appended before declining.
func TestCanonicalizeAppender(t *testing.T) {
	c, err := Canonicalize(fixedAppender{A: "x", b: []byte(`{"own":1}`)})
	if err != nil || string(c.b) != `{"own":1}` {
		t.Fatalf("appender: %s, %v", c.b, err)
	}
	c, err = Canonicalize(fixedAppender{A: "<x>"})
	if err != nil || string(c.b) != `{"a":"<x>"}` {
		t.Fatalf("declining appender: %s, %v", c.b, err)
	}
}

// TestAppendCanonicalString: every byte below 0x80 alone and in company, the
// separators encoding/json escapes and some non-ASCII text are written as the
// encoding/json path writes them; invalid UTF-8 is declined.
func TestAppendCanonicalString(t *testing.T) {
	cases := []string{"", "Escort the ore convoy", "<&>", `"quoted" \ back`, "\u2028\u2029", "é 😀 ÿ", "\x7f", "a\x00b\x1f\u007f"}
	for c := 0; c < 0x80; c++ {
		cases = append(cases, string(rune(c)), "x"+string(rune(c))+"y")
	}
	for _, s := range cases {
		got, ok := AppendCanonicalString([]byte("{"), s)
		want := slowCanonical(t, map[string]string{"": s})
		if !ok || string(got)+"}" != strings.Replace(string(want), `"":`, "", 1) {
			t.Errorf("%q: got %s (ok %v), want the value of %s", s, got, ok, want)
		}
	}
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80"} {
		if got, ok := AppendCanonicalString([]byte("x"), s); ok || string(got) != "x" {
			t.Errorf("%q: got %q, %v; want declined, nothing appended", s, got, ok)
		}
	}
}
