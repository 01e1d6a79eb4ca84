package commands_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/civnode/civnode/commands"
)

func TestCapText(t *testing.T) {
	q := commands.MaxErrorQuote
	for _, c := range []struct{ name, in, want string }{
		{"short", "no mission has mission_id m-1", "no mission has mission_id m-1"},
		{"a run at the bound", "id " + strings.Repeat("a", q), "id " + strings.Repeat("a", q)},
		{"a run past the bound", "id " + strings.Repeat("a", q+1) + " is unknown", "id " + strings.Repeat("a", q) + "… is unknown"},
		{"cut on a character boundary", "id " + strings.Repeat("é", q) + " x", "id " + strings.Repeat("é", q/2) + "… x"},
		{"cut inside a character", "id b" + strings.Repeat("é", q) + " x", "id b" + strings.Repeat("é", (q-1)/2) + "… x"},
		{"every run on its own", strings.Repeat("a", 2*q) + " " + strings.Repeat("b", 2*q), strings.Repeat("a", q) + "… " + strings.Repeat("b", q) + "…"},
	} {
		if got := commands.CapText(c.in); got != c.want {
			t.Errorf("%s: got %q\nwant %q", c.name, got, c.want)
		}
	}
	// Many short words: the whole is bounded.
	long := strings.Repeat("word ", 10_000)
	got := commands.CapText(long)
	if len(got) > commands.MaxErrorText+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("a long text capped to %d bytes: %.80q…", len(got), got)
	}
	if s := commands.CapText(strings.Repeat("€ ", 2000)); !utf8.ValidString(s) {
		t.Errorf("the whole cut split a character")
	}
}
