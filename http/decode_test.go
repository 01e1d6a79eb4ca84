package http

import (
	"encoding/json"
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

// TestDecodeIJSON: a body that is not I-JSON (RFC 7493) is 400 invalid_json
// naming the member at fault, a faulty key by its own name with the fault shown
// as U+FFFD; a valid astral character passes as the client sent it.
func TestDecodeIJSON(t *testing.T) {
	n := decodeNode(t)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"invalid UTF-8 in a value", "{\"name\":\"a\xffb\"}", "name"},
		{"invalid UTF-8 in a key", "{\"na\xffme\":\"a\"}", "na\ufffdme"},
		{"truncated UTF-8 sequence", "{\"name\":\"\xe2\x82\"}", "name"},
		{"UTF-8 encoded surrogate", "{\"name\":\"\xed\xa0\x80\"}", "name"},
		{"overlong encoding", "{\"name\":\"\xc0\xaf\"}", "name"},
		{"lone high surrogate", `{"name":"\ud800"}`, "name"},
		{"lone low surrogate", `{"name":"\udc00"}`, "name"},
		{"high surrogate then a letter", `{"name":"\ud800\u0041"}`, "name"},
		{"two high surrogates", `{"name":"\ud800\ud800"}`, "name"},
		{"pair in the wrong order", `{"name":"\udc00\ud800"}`, "name"},
		{"high surrogate at the end", `{"name":"x\uD800"}`, "name"},
		{"raw noncharacter U+FFFE", "{\"name\":\"\xef\xbf\xbe\"}", "name"},
		{"escaped noncharacter U+FDD0", `{"name":"\uFDD0"}`, "name"},
		{"escaped noncharacter U+FDEF", `{"name":"a\ufdefb"}`, "name"},
		{"U+10FFFF as a surrogate pair", `{"name":"\uDBFF\uDFFF"}`, "name"},
		{"raw noncharacter U+1FFFF", "{\"name\":\"\xf0\x9f\xbf\xbf\"}", "name"},
		{"noncharacter in a nested key", `{"nested":{"\uffff":true}}`, "nested.\ufffd"},
		{"lone surrogate in an array element", `{"tags":["ok","\ud800"]}`, "tags"},
		{"noncharacter in an unknown member", `{"bogus":"\ufffe"}`, "bogus"},
		{"fault before a type error", `{"count":"x","name":"\ud800"}`, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.request(http.MethodPost, "/test/decode", testToken, strings.NewReader(tc.body),
				"Content-Type", "application/json")
			r.wantError(t, http.StatusBadRequest, "invalid_json", tc.field)
		})
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"escaped astral pair", `{"name":"\ud83d\ude00"}`, "😀"},
		{"raw astral character", `{"name":"😀"}`, "😀"},
		{"replacement character", "{\"name\":\"\\uFFFD\xef\xbf\xbd\"}", "\ufffd\ufffd"},
		{"neighbours of the noncharacters", `{"name":"\ufdcf\ufdf0\ufffd\ud83f\udffd"}`, "\ufdcf\ufdf0\ufffd\U0001fffd"},
		{"escaped backslash before u", `{"name":"\\ud800"}`, `\ud800`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.request(http.MethodPost, "/test/decode", testToken, strings.NewReader(tc.body),
				"Content-Type", "application/json")
			var got decodeTarget
			r.wantOK(t, &got)
			if got.Name != tc.want {
				t.Errorf("name = %q, want %q", got.Name, tc.want)
			}
		})
	}
}

// rawMission is missionBody with field set to raw, a JSON value spliced in as
// bytes so that it may hold what no encoder would write.
func rawMission(t *testing.T, field, raw string) string {
	t.Helper()
	b, err := json.Marshal(missionBody(map[string]any{field: nil}))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "}") + `,"` + field + `":` + raw + "}"
}

// TestIJSONEndpoints: through the real write endpoints, a body that is not
// I-JSON is refused naming the field, however deep, and appends nothing; a
// valid astral character is stored and signed as the client sent it.
func TestIJSONEndpoints(t *testing.T) {
	w := newMissionWorld(t)
	claimed := w.advance("claimed")
	created := w.advance("created")
	for _, tc := range []struct {
		name, path, token, body, field string
	}{
		{"title lone surrogate", "/v1/core/missions", w.tokens["pub"], rawMission(t, "title", `"Escort \ud800"`), "title"},
		{"payload nested lone surrogate", "/v1/core/missions", w.tokens["pub"],
			rawMission(t, "payload", `{"route":{"note":"\udc00"}}`), "payload.route.note"},
		{"payload noncharacter in an array", "/v1/core/missions", w.tokens["pub"],
			rawMission(t, "payload", `{"steps":[{"x":"\uDBFF\uDFFF"}]}`), "payload.steps.x"},
		{"payload noncharacter key", "/v1/core/missions", w.tokens["pub"],
			rawMission(t, "payload", `{"ok":1,"\uFDD0":2}`), "payload.\ufffd"},
		{"payload invalid UTF-8", "/v1/core/missions", w.tokens["pub"],
			rawMission(t, "payload", "{\"note\":\"\xff\"}"), "payload.note"},
		{"reward key invalid UTF-8", "/v1/core/missions", w.tokens["pub"],
			rawMission(t, "reward", "{\"agent_cr\xffedit\":1}"), "reward.agent_cr\ufffdedit"},
		{"bootstrap raw noncharacter", "/v1/civilization/bootstrap-identity", testToken,
			"{\"display_name\":\"Ada\xef\xbf\xbf\"}", "display_name"},
		{"token acts_for lone surrogate", "/v1/admin/tokens", testToken, `{"kind":"agent","acts_for":"\ud800"}`, "acts_for"},
		{"claim claimer lone surrogate", "/v1/core/missions/" + created.MissionID + "/claim", w.tokens["ada"],
			`{"claimer":"ada\udc00"}`, "claimer"},
		{"complete result invalid UTF-8", "/v1/core/missions/" + claimed.MissionID + "/complete", w.tokens["ada"],
			"{\"result\":\"done \xc3\"}", "result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.refused(t, w.civSend(http.MethodPost, tc.path, tc.token, tc.body), w.log.Tip().Seq,
				http.StatusBadRequest, "invalid_json", tc.field)
		})
	}

	body := strings.Replace(rawMission(t, "payload", `{"mood":"\ud83d\ude00","😀":"\uD83D\uDE00"}`),
		`"title":"Escort the convoy"`, `"title":"Escort \ud83d\ude00 and 😀"`, 1)
	var rec struct {
		MissionID string          `json:"mission_id"`
		Title     string          `json:"title"`
		Payload   json.RawMessage `json:"payload"`
	}
	w.civSend(http.MethodPost, "/v1/core/missions", w.tokens["pub"], body).wantOK(t, &rec)
	if rec.Title != "Escort 😀 and 😀" {
		t.Errorf("title = %q", rec.Title)
	}
	ev, err := w.log.Event(w.log.Tip().Seq)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != "mission.created" {
		t.Fatalf("tip is %s, want mission.created", ev.Type)
	}
	for _, want := range []string{`"title":"Escort 😀 and 😀"`, `"😀":"😀"`, `"mood":"😀"`} {
		if !strings.Contains(string(ev.Payload), want) {
			t.Errorf("signed payload %s lacks %s", ev.Payload, want)
		}
	}
}
