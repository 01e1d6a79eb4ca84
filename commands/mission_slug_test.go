package commands

import "testing"

// TestIsSlugIsThePattern: the hand-written slug check accepts exactly what
// slugPattern does.
func TestIsSlugIsThePattern(t *testing.T) {
	cases := []string{"", "a", "-", "genesis", "north-dock", "a1-b2", "A", "a_b", "a b", "é", "a\n", "\na",
		"abcdefghijklmnopqrstuvwxyz0123456789-abcdefghijklmnopqrstuvwxyz0",  // 64
		"abcdefghijklmnopqrstuvwxyz0123456789-abcdefghijklmnopqrstuvwxyz01", // 65
		"x\x00", "z{", "0/", "`a"}
	for c := 0; c < 256; c++ {
		cases = append(cases, string(rune(c)), "a"+string([]byte{byte(c)}))
	}
	for _, s := range cases {
		if got, want := IsSlug(s), slugPattern.MatchString(s); got != want {
			t.Errorf("IsSlug(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

func FuzzIsSlug(f *testing.F) {
	f.Add("north-dock")
	f.Add("A-b")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := IsSlug(s), slugPattern.MatchString(s); got != want {
			t.Errorf("IsSlug(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
