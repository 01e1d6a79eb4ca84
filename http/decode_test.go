package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
)

type decodeTarget struct {
	Name   string `json:"name"`
	Count  int    `json:"count"`
	Nested struct {
		Flag bool `json:"flag"`
	} `json:"nested"`
	Tags []string `json:"tags"`
}

// decodeNode serves POST /test/decode, which decodes into decodeTarget with a body
// limit of 256 bytes and echoes the result.
func decodeNode(t *testing.T) *testNode {
	return newTestNodeWith(t, func(o *Options) { o.BodyLimit = 256 }, func(s *Server) {
		s.handle(http.MethodPost, "/test/decode", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			var v decodeTarget
			if err := s.decodeJSON(w, r, &v); err != nil {
				return err
			}
			return writeJSON(w, v)
		}, 0)
	})
}

func TestDecodeJSON(t *testing.T) {
	n := decodeNode(t)
	for _, tc := range []struct {
		name, body  string
		status      int
		code, field string
	}{
		{"valid", `{"name":"a","count":2,"nested":{"flag":true},"tags":["x"]}`, 200, "", ""},
		{"valid with trailing space", "{\"name\":\"a\"}\n\t ", 200, "", ""},
		{"unknown field", `{"name":"a","agent_credits":5}`, 400, "unknown_field", "agent_credits"},
		{"unknown nested field", `{"nested":{"flag":true,"bogus":1}}`, 400, "unknown_field", "bogus"},
		{"malformed", `{"name":`, 400, "invalid_json", ""},
		{"syntax error", `{"name" "a"}`, 400, "invalid_json", ""},
		{"empty body", ``, 400, "invalid_json", ""},
		{"array body", `[1,2]`, 400, "invalid_json", ""},
		{"string body", `"x"`, 400, "invalid_json", ""},
		{"wrong type", `{"name":1}`, 400, "invalid_field", "name"},
		{"wrong nested type", `{"nested":{"flag":"yes"}}`, 400, "invalid_field", "nested.flag"},
		{"integer overflow", `{"count":1e400}`, 400, "invalid_field", "count"},
		{"fraction for integer", `{"count":1.5}`, 400, "invalid_field", "count"},
		{"wrong element type", `{"tags":[1]}`, 400, "invalid_field", "tags"},
		{"two values", `{"name":"a"}{"name":"b"}`, 400, "invalid_json", ""},
		{"duplicate field", `{"name":"a","name":"b"}`, 400, "invalid_json", "name"},
		{"duplicate nested field", `{"nested":{"flag":true,"flag":false}}`, 400, "invalid_json", "nested.flag"},
		{"trailing garbage", `{"name":"a"} x`, 400, "invalid_json", ""},
		{"too large", `{"name":"` + strings.Repeat("a", 300) + `"}`, 413, "body_too_large", ""},
		{"too large after value", `{"name":"a"}` + strings.Repeat(" ", 300), 413, "body_too_large", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.request(http.MethodPost, "/test/decode", testToken, strings.NewReader(tc.body),
				"Content-Type", "application/json")
			if tc.status == 200 {
				if r.status != 200 {
					t.Fatalf("status %d (body %s)", r.status, r.body)
				}
				return
			}
			r.wantError(t, tc.status, tc.code, tc.field)
		})
	}
}
