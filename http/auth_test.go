package http

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
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

// TestTokenKindsOnRoutes: observers read only the event log, its export and
// health; agents read everything but the audit log and the admin endpoints; the
// owner reads everything. Revoked and replaced secrets are 401.
func TestTokenKindsOnRoutes(t *testing.T) {
	n, ts := newTokenNode(t, nil)
	ownerActor := commands.Actor{TokenID: "owner", Kind: commands.ActorOwner}
	obs := issue(t, ts, "observer", "")
	agent := issue(t, ts, "agent", "alice")
	revoked := issue(t, ts, "agent", "alice")
	rotated := issue(t, ts, "observer", "")
	if _, err := ts.Revoke(context.Background(), ownerActor, revoked.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Rotate(context.Background(), ownerActor, rotated.ID); err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip()

	paths := []string{"/v1/health", "/v1/events", "/v1/events/export", "/v1/state", "/v1/audit", "/v1/admin/tokens"}
	for _, tc := range []struct {
		name   string
		token  string
		status []int // per path
	}{
		{"owner", testToken, []int{200, 200, 200, 200, 200, 200}},
		{"agent", agent.Secret, []int{200, 200, 200, 200, 403, 403}},
		{"observer", obs.Secret, []int{200, 200, 200, 403, 403, 403}},
		{"revoked", revoked.Secret, []int{200, 401, 401, 401, 401, 401}},
		{"replaced by rotation", rotated.Secret, []int{200, 401, 401, 401, 401, 401}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, p := range paths {
				r := n.request(http.MethodGet, p, tc.token, nil)
				switch tc.status[i] {
				case 200:
					if r.status != http.StatusOK {
						t.Errorf("GET %s: %d (body %.200s), want 200", p, r.status, r.body)
					}
				case 401:
					r.wantError(t, http.StatusUnauthorized, "unauthorized", "")
				case 403:
					r.wantError(t, http.StatusForbidden, "forbidden", "")
				}
			}
		})
	}
	// POST routes are refused by kind before the body is read.
	n.post("/v1/admin/tokens", obs.Secret, `not json`).wantError(t, http.StatusForbidden, "forbidden", "")
	if got := n.log.Tip(); got != tip {
		t.Errorf("tip moved from %+v to %+v", tip, got)
	}
	// The export by an observer is audited under its token id.
	es := n.auditEntries("export.sealed")
	var actors []string
	for _, e := range es {
		actors = append(actors, e.Actor)
	}
	if !slices.Contains(actors, "token:"+obs.ID) || !slices.Contains(actors, "token:"+agent.ID) || !slices.Contains(actors, "token:owner") {
		t.Errorf("export.sealed actors = %v", actors)
	}
}

// TestRequestActor checks what a handler sees of each token.
func TestRequestActor(t *testing.T) {
	var tokens *commands.Tokens
	n := newTestNodeWith(t, func(o *Options) {
		ts, err := commands.NewTokens(commands.TokensOptions{Store: o.Log, Auditor: o.Log, NodeDID: o.Log.NodeDID(),
			Identities: tokenIdentities{"alice": tokenAliceDID}})
		if err != nil {
			t.Fatal(err)
		}
		tokens, o.Tokens, o.Governs = ts, ts, []string{"genesis", "mars"}
	}, func(s *Server) {
		echo := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			return writeJSON(w, requestActor(r.Context()))
		}
		s.handle(http.MethodGet, "/test/actor", echo, 0)
		s.handle(http.MethodGet, "/test/public", echo, routePublic)
	})
	agent := issue(t, tokens, "agent", "alice")
	for _, tc := range []struct {
		path, token string
		want        commands.Actor
	}{
		{"/test/actor", testToken, commands.Actor{TokenID: "owner", Kind: commands.ActorOwner, Governs: []string{"genesis", "mars"}}},
		{"/test/actor", agent.Secret, commands.Actor{TokenID: agent.ID, Kind: commands.ActorAgent, AgentDID: tokenAliceDID}},
		{"/test/public", testToken, commands.Actor{}},
	} {
		var got commands.Actor
		n.request(http.MethodGet, tc.path, tc.token, nil).decode(t, &got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: actor %+v, want %+v", tc.path, got, tc.want)
		}
	}
	obs := issue(t, tokens, "observer", "")
	n.request(http.MethodGet, "/test/actor", obs.Secret, nil).wantError(t, http.StatusForbidden, "forbidden", "")
}
