package http

import "testing"

func TestDuplicateKey(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":2}`:                        "",
		`{"a":1,"a":2}`:                        "a",
		`{"a":{"x":1,"x":2}}`:                  "a.x",
		`{"a":[{"x":1},{"x":2}],"b":1}`:        "",
		`{"a":[{"x":1,"y":[1,2],"x":3}]}`:      "a.x",
		`{"a":{"b":{}},"c":{"b":1},"a":0}`:     "a",
		`{"reward":{"agent_credit":1},"r":{}}`: "",
		`[1,2,{"k":1,"k":1}]`:                  "k",
		`{"a":`:                                "",
	} {
		got, dup := duplicateKey([]byte(in))
		if got != want || dup != (want != "") {
			t.Errorf("%s: got %q %v, want %q", in, got, dup, want)
		}
	}
}
