package http

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestUnauthorized(t *testing.T) {
	var logs logBuffer
	n := newTestNodeWith(t, func(o *Options) { o.Logger = debugLogger(&logs) }, nil)
	n.appendEvents("mission.created")
	before := n.log.Tip()

	const wrong = "wrong-token-value"
	cases := []struct {
		name   string
		header string // Authorization; "" sends none
	}{
		{"no header", ""},
		{"wrong token", "Bearer " + wrong},
		{"wrong scheme", "Basic " + testToken},
		{"scheme only", "Bearer"},
		{"empty token", "Bearer "},
		{"token prefix", "Bearer " + testToken[:len(testToken)-1]},
		{"token with suffix", "Bearer " + testToken + "x"},
		{"token twice", "Bearer " + testToken + " " + testToken},
		{"no scheme", testToken},
	}
	paths := []string{"/v1/state", "/v1/events", "/v1/events/export", "/v1/audit"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range paths {
				var hdr []string
				if tc.header != "" {
					hdr = []string{"Authorization", tc.header}
				}
				r := n.request(http.MethodGet, p, "", nil, hdr...)
				r.wantError(t, http.StatusUnauthorized, "unauthorized", "")
				if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("%s: WWW-Authenticate = %q", p, got)
				}
			}
		})
	}
	if after := n.log.Tip(); after != before {
		t.Errorf("tip moved from %+v to %+v: a refused request appended an event", before, after)
	}

	// Failures are audited, rate-limited, and never carry a token.
	entries := n.auditEntries("auth.failed")
	attempts := len(cases) * len(paths)
	if len(entries) == 0 || len(entries) >= attempts {
		t.Errorf("%d auth.failed entries for %d failures; want some, rate-limited", len(entries), attempts)
	}
	for _, e := range entries {
		if e.Actor != "anonymous" {
			t.Errorf("actor = %q, want anonymous", e.Actor)
		}
		var d map[string]string
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if len(d) != 2 || !strings.HasPrefix(d["path"], "/v1/") || !strings.HasPrefix(d["remote"], "127.0.0.1:") {
			t.Errorf("detail = %s, want {path, remote}", e.Detail)
		}
	}
	all, _ := json.Marshal(n.auditEntries(""))
	for _, secret := range []string{testToken, wrong} {
		if strings.Contains(string(all), secret) {
			t.Errorf("audit log contains a presented token")
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("server log contains a presented token")
		}
	}
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	n := newTestNode(t)
	for _, h := range []string{"Bearer " + testToken, "bearer " + testToken, "BEARER  " + testToken} {
		r := n.request(http.MethodGet, "/v1/state", "", nil, "Authorization", h)
		if r.status != http.StatusOK {
			t.Errorf("%q: status = %d (body %s)", h, r.status, r.body)
		}
	}
}

func TestEmptyOwnerTokenRefusesEveryone(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.OwnerToken = "" }, nil)
	for _, h := range []string{"", "Bearer ", "Bearer x"} {
		var hdr []string
		if h != "" {
			hdr = []string{"Authorization", h}
		}
		n.request(http.MethodGet, "/v1/state", "", nil, hdr...).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"Bearer   abc  ", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Basic abc", "", false},
		{"Bearerabc", "", false},
		{"", "", false},
	} {
		token, ok := bearerToken(tc.header)
		if token != tc.token || ok != tc.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.token, tc.ok)
		}
	}
}
