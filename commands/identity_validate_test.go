package commands

import (
	"strings"
	"testing"
)

func TestSlugBase(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Ada Lovelace", "ada-lovelace"},
		{"  --Hello__World!! ", "hello-world"},
		{"R2-D2", "r2-d2"},
		{"Al", "al-agent"},
		{"X", "x-agent"},
		{"日本", "agent"},
		{"Zoë", "zo-agent"},
		{"Zoë Ångström", "zo-ngstr-m"},
		{strings.Repeat("abcde ", 10), "abcde-abcde-abcde-abcde-abcde-abcde-abcd"},
		{strings.Repeat("a", 39) + " b", strings.Repeat("a", 39)},
	} {
		got := slugBase(tc.name)
		if got != tc.want {
			t.Errorf("slugBase(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if !publicIDPattern.MatchString(got) {
			t.Errorf("slugBase(%q) = %q is not a valid public_id", tc.name, got)
		}
	}
}

func TestSlugCandidate(t *testing.T) {
	long := strings.Repeat("a", 40)
	for _, tc := range []struct {
		base string
		i    int
		want string
	}{
		{"ada", 1, "ada"},
		{"ada", 2, "ada-2"},
		{"ada", 12, "ada-12"},
		{long, 2, strings.Repeat("a", 38) + "-2"},
		{long, 100, strings.Repeat("a", 36) + "-100"},
		{strings.Repeat("a", 37) + "-bc", 2, strings.Repeat("a", 37) + "-2"},
	} {
		got := slugCandidate(tc.base, tc.i)
		if got != tc.want {
			t.Errorf("slugCandidate(%q, %d) = %q, want %q", tc.base, tc.i, got, tc.want)
		}
		if !publicIDPattern.MatchString(got) {
			t.Errorf("slugCandidate(%q, %d) = %q is not a valid public_id", tc.base, tc.i, got)
		}
	}
}

func TestCheckDisplayName(t *testing.T) {
	for _, tc := range []struct {
		name string
		code string
	}{
		{"Ada", ""},
		{"Zoë 日本 🚀", ""},
		{strings.Repeat("é", 64), ""},
		{"", "missing_field"},
		{strings.Repeat("é", 65), "invalid_field"},
		{"tab\there", "invalid_field"},
		{"line\nbreak", "invalid_field"},
		{"nul\x00", "invalid_field"},
		{"del\x7f", "invalid_field"},
		{"c1\u0085", "invalid_field"},
		{"bad\xffutf8", "invalid_field"},
		{"   ", "invalid_field"},
	} {
		err := checkDisplayName(tc.name)
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%q: %v", tc.name, err)
		case tc.code != "" && (err == nil || err.(*Error).Code != tc.code || err.(*Error).Field != "display_name"):
			t.Errorf("%q: err = %v, want %s on display_name", tc.name, err, tc.code)
		}
	}
}
