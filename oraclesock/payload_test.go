package oraclesock

import (
	"errors"
	"testing"

	"github.com/civnode/civnode/commands"
)

// TestCheckPayload: JSON that is I-JSON passes; anything else is the
// commands' invalid or missing payload.
func TestCheckPayload(t *testing.T) {
	for _, tc := range []struct {
		payload string
		code    string // "" passes
	}{
		{`{"price":1}`, ""},
		{` [1,2] `, ""},
		{"  ", "missing_field"},
		{`{"a":`, "invalid_field"},
		{`{"a":1,"a":2}`, "invalid_field"},
	} {
		err := CheckPayload([]byte(tc.payload))
		var ce *commands.Error
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%q: %v", tc.payload, err)
		case tc.code != "" && (!errors.As(err, &ce) || ce.Code != tc.code):
			t.Errorf("%q: %v, want %s", tc.payload, err, tc.code)
		}
	}
}
