package http

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// tokenIdentities stands in for the identities read model the token service
// resolves acts_for with.
type tokenIdentities map[string]string

func (m tokenIdentities) IdentityBySlug(publicID string) (events.IdentityRef, bool, error) {
	did, ok := m[publicID]
	return events.IdentityRef{AgentDID: did, PublicID: publicID}, ok, nil
}

func (m tokenIdentities) PublicIDOf(agentDID string) (string, bool, error) {
	for slug, did := range m {
		if did == agentDID {
			return slug, true, nil
		}
	}
	return "", false, nil
}

const tokenAliceDID = "did:key:z6MkAliceTokenTest"

// newTokenNode is a test node with a real token service over its log. logs, if
// not nil, receives the server's log at Debug.
func newTokenNode(t *testing.T, logs *logBuffer) (*testNode, *commands.Tokens) {
	t.Helper()
	var tokens *commands.Tokens
	n := newTestNodeWith(t, func(o *Options) {
		ts, err := commands.NewTokens(commands.TokensOptions{Store: o.Log, Auditor: o.Log, NodeDID: o.Log.NodeDID(),
			Identities: tokenIdentities{"alice": tokenAliceDID}})
		if err != nil {
			t.Fatal(err)
		}
		tokens, o.Tokens = ts, ts
		if logs != nil {
			o.Logger = debugLogger(logs)
		}
	}, nil)
	return n, tokens
}

// issue creates a token through the service, as the owner.
func issue(t *testing.T, ts *commands.Tokens, kind, publicID string) commands.IssuedToken {
	t.Helper()
	it, err := ts.Create(context.Background(), commands.Actor{TokenID: "owner", Kind: commands.ActorOwner}, kind, publicID)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func (n *testNode) post(path, token, body string) response {
	n.t.Helper()
	return n.request(http.MethodPost, path, token, strings.NewReader(body), "Content-Type", "application/json")
}

var issuedKeys = []string{"token_id", "token", "kind", "public_id", "agent_did", "created_at", "rotated_at", "revoked_at"}

// wantKeys checks that m has exactly keys.
func wantKeys(t *testing.T, m map[string]any, keys ...string) {
	t.Helper()
	if len(m) != len(keys) {
		t.Errorf("keys of %v, want %v", m, keys)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %v", k, m)
		}
	}
}

func TestAdminTokenLifecycle(t *testing.T) {
	var logs logBuffer
	n, _ := newTokenNode(t, &logs)
	tip := n.log.Tip()
	var secrets []string

	// Create an observer and an agent.
	var obs map[string]any
	r := n.post("/v1/admin/tokens", testToken, `{"kind":"observer"}`)
	if r.status != http.StatusOK {
		t.Fatalf("create observer: %d %s", r.status, r.body)
	}
	r.decode(t, &obs)
	wantKeys(t, obs, issuedKeys...)
	obsID, obsSecret := obs["token_id"].(string), obs["token"].(string)
	if !regexp.MustCompile(`^tok_[0-9a-f]{12}$`).MatchString(obsID) || !regexp.MustCompile(`^cvn_[0-9a-f]{64}$`).MatchString(obsSecret) ||
		obs["kind"] != "observer" || obs["public_id"] != nil || obs["agent_did"] != nil || obs["rotated_at"] != nil || obs["revoked_at"] != nil {
		t.Errorf("observer = %s", r.body)
	}
	var agent map[string]any
	r = n.post("/v1/admin/tokens", testToken, `{"kind":"agent","acts_for":"alice"}`)
	if r.status != http.StatusOK {
		t.Fatalf("create agent: %d %s", r.status, r.body)
	}
	r.decode(t, &agent)
	agentID, agentSecret := agent["token_id"].(string), agent["token"].(string)
	if agent["kind"] != "agent" || agent["public_id"] != "alice" || agent["agent_did"] != tokenAliceDID {
		t.Errorf("agent = %s", r.body)
	}
	secrets = append(secrets, obsSecret, agentSecret)
	if n.request(http.MethodGet, "/v1/events", obsSecret, nil).status != http.StatusOK ||
		n.request(http.MethodGet, "/v1/state", agentSecret, nil).status != http.StatusOK {
		t.Fatal("new tokens do not authenticate")
	}

	// The list shows both, without secrets or digests.
	r = n.get("/v1/admin/tokens")
	var list struct {
		Tokens []map[string]any `json:"tokens"`
	}
	r.decode(t, &list)
	if len(list.Tokens) != 2 || list.Tokens[0]["token_id"] != obsID || list.Tokens[1]["token_id"] != agentID {
		t.Fatalf("list = %s", r.body)
	}
	for _, tk := range list.Tokens {
		wantKeys(t, tk, "token_id", "kind", "public_id", "agent_did", "created_at", "rotated_at", "revoked_at")
	}

	// Rotate the agent: the old secret is refused at once.
	var rot map[string]any
	r = n.post("/v1/admin/tokens/"+agentID+"/rotate", testToken, `{}`)
	if r.status != http.StatusOK {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	r.decode(t, &rot)
	wantKeys(t, rot, issuedKeys...)
	newSecret, _ := rot["token"].(string)
	if rot["token_id"] != agentID || newSecret == agentSecret || rot["rotated_at"] == nil || rot["created_at"] != agent["created_at"] {
		t.Errorf("rotated = %s", r.body)
	}
	secrets = append(secrets, newSecret)
	n.request(http.MethodGet, "/v1/state", agentSecret, nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	if r := n.request(http.MethodGet, "/v1/state", newSecret, nil); r.status != http.StatusOK {
		t.Errorf("rotated secret: %d", r.status)
	}

	// Revoke the observer: refused at once, still listed.
	var rev map[string]any
	r = n.post("/v1/admin/tokens/"+obsID+"/revoke", testToken, `{}`)
	if r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	r.decode(t, &rev)
	wantKeys(t, rev, "token_id", "kind", "public_id", "agent_did", "created_at", "rotated_at", "revoked_at")
	if rev["token_id"] != obsID || rev["revoked_at"] == nil {
		t.Errorf("revoked = %s", r.body)
	}
	n.request(http.MethodGet, "/v1/events", obsSecret, nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	n.get("/v1/admin/tokens").decode(t, &list)
	if len(list.Tokens) != 2 || list.Tokens[0]["revoked_at"] == nil || list.Tokens[1]["revoked_at"] != nil {
		t.Errorf("list after revoke = %+v", list.Tokens)
	}

	// Each action is audited by the owner's token id, naming the token by id.
	var audit auditResponse
	n.get("/v1/audit?action=token.*").decode(t, &audit)
	want := []struct{ action, id, detail string }{
		{"token.created", obsID, `{"token_id":"` + obsID + `","kind":"observer","public_id":null}`},
		{"token.created", agentID, `{"token_id":"` + agentID + `","kind":"agent","public_id":"alice"}`},
		{"token.rotated", agentID, `{"token_id":"` + agentID + `","kind":"agent","public_id":"alice"}`},
		{"token.revoked", obsID, `{"token_id":"` + obsID + `","kind":"observer","public_id":null}`},
	}
	if len(audit.Entries) != len(want) {
		t.Fatalf("token audit entries = %+v", audit.Entries)
	}
	for i, w := range want {
		e := audit.Entries[i]
		if e.Action != w.action || e.Actor != "token:owner" || string(e.Detail) != w.detail {
			t.Errorf("entry %d = %s by %s %s, want %s by token:owner %s", i, e.Action, e.Actor, e.Detail, w.action, w.detail)
		}
	}

	if got := n.log.Tip(); got != tip {
		t.Errorf("tip moved from %+v to %+v: token actions must not append events", tip, got)
	}
	// Secrets appear in no audit entry, stored record or log line.
	all, _ := json.Marshal(n.auditEntries(""))
	recs, err := n.log.Records(commands.TokenRecordKind)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		hexPart := strings.TrimPrefix(s, "cvn_")
		if strings.Contains(string(all), hexPart) {
			t.Error("the audit log holds a token secret")
		}
		for _, raw := range recs {
			if strings.Contains(string(raw), hexPart) {
				t.Error("a token record holds its secret")
			}
		}
		if strings.Contains(logs.String(), hexPart) {
			t.Error("the server log holds a token secret")
		}
	}
	if !strings.Contains(logs.String(), "/v1/admin/tokens") {
		t.Error("the debug log did not capture the requests; the check above proves nothing")
	}
}

// TestAdminTokenErrors: every refusal has its status and code, and changes
// nothing: no event, no token record, no token audit entry.
func TestAdminTokenErrors(t *testing.T) {
	n, ts := newTokenNode(t, nil)
	obs := issue(t, ts, "observer", "")
	agent := issue(t, ts, "agent", "alice")
	revoked := issue(t, ts, "observer", "")
	if _, err := ts.Revoke(context.Background(), commands.Actor{TokenID: "owner", Kind: commands.ActorOwner}, revoked.ID); err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip()
	records, _ := n.log.Records(commands.TokenRecordKind)
	audited := len(n.auditEntries("token.*"))

	create, rotate, revoke := "/v1/admin/tokens", "/v1/admin/tokens/"+agent.ID+"/rotate", "/v1/admin/tokens/"+agent.ID+"/revoke"
	for _, tc := range []struct {
		name                string
		method, path, token string
		body                string
		status              int
		code, field         string
	}{
		{"unknown field", "POST", create, testToken, `{"kind":"observer","scope":"all"}`, 400, "unknown_field", "scope"},
		{"malformed", "POST", create, testToken, `{"kind":`, 400, "invalid_json", ""},
		{"empty body", "POST", create, testToken, ``, 400, "invalid_json", ""},
		{"kind not a string", "POST", create, testToken, `{"kind":1}`, 400, "invalid_field", "kind"},
		{"no kind", "POST", create, testToken, `{}`, 400, "missing_field", "kind"},
		{"bad kind", "POST", create, testToken, `{"kind":"owner"}`, 400, "invalid_field", "kind"},
		{"agent without identity", "POST", create, testToken, `{"kind":"agent"}`, 400, "missing_field", "acts_for"},
		{"agent for unknown identity", "POST", create, testToken, `{"kind":"agent","acts_for":"bob"}`, 404, "identity_not_found", "acts_for"},
		{"observer acting for someone", "POST", create, testToken, `{"kind":"observer","acts_for":"alice"}`, 400, "invalid_field", "acts_for"},
		{"rotate unknown", "POST", "/v1/admin/tokens/tok_000000000000/rotate", testToken, `{}`, 404, "token_not_found", ""},
		{"revoke unknown", "POST", "/v1/admin/tokens/nope/revoke", testToken, `{}`, 404, "token_not_found", ""},
		{"rotate unknown field", "POST", rotate, testToken, `{"token_id":"x"}`, 400, "unknown_field", "token_id"},
		{"revoke empty body", "POST", revoke, testToken, ``, 400, "invalid_json", ""},
		{"rotate revoked", "POST", "/v1/admin/tokens/" + revoked.ID + "/rotate", testToken, `{}`, 409, "invalid_state", ""},
		{"agent creates", "POST", create, agent.Secret, `{"kind":"observer"}`, 403, "forbidden", ""},
		{"agent lists", "GET", create, agent.Secret, ``, 403, "forbidden", ""},
		{"agent rotates itself", "POST", rotate, agent.Secret, `{}`, 403, "forbidden", ""},
		{"agent revokes", "POST", "/v1/admin/tokens/" + obs.ID + "/revoke", agent.Secret, `{}`, 403, "forbidden", ""},
		{"observer creates", "POST", create, obs.Secret, `{"kind":"observer"}`, 403, "forbidden", ""},
		{"observer lists", "GET", create, obs.Secret, ``, 403, "forbidden", ""},
		{"observer revokes", "POST", revoke, obs.Secret, `{}`, 403, "forbidden", ""},
		{"revoked token", "POST", create, revoked.Secret, `{"kind":"observer"}`, 401, "unauthorized", ""},
		{"no token", "POST", create, "", `{"kind":"observer"}`, 401, "unauthorized", ""},
		{"wrong method", "DELETE", create, testToken, ``, 405, "method_not_allowed", ""},
		{"rotate by GET", "GET", rotate, testToken, ``, 405, "method_not_allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.request(tc.method, tc.path, tc.token, strings.NewReader(tc.body)).wantError(t, tc.status, tc.code, tc.field)
			if got := n.log.Tip(); got != tip {
				t.Errorf("tip moved from %+v to %+v", tip, got)
			}
			if recs, _ := n.log.Records(commands.TokenRecordKind); len(recs) != len(records) {
				t.Errorf("%d token records, want %d", len(recs), len(records))
			}
			if got := len(n.auditEntries("token.*")); got != audited {
				t.Errorf("%d token audit entries, want %d", got, audited)
			}
		})
	}
	if _, ok := ts.Authenticate(agent.Secret); !ok {
		t.Error("a refused request changed the agent token")
	}
}

func TestAdminNeedsTokenService(t *testing.T) {
	n := newTestNode(t)
	n.get("/v1/admin/tokens").wantError(t, http.StatusNotFound, "not_found", "")
	n.post("/v1/admin/tokens", testToken, `{"kind":"observer"}`).wantError(t, http.StatusNotFound, "not_found", "")
}

// TestAdminRefusesTokenForHandedOffIdentity: once an identity's own token has
// bound it to another node, the owner can issue no agent token for it (403,
// nothing stored or audited), and the token issued before the hand-off cannot
// bind it back.
func TestAdminRefusesTokenForHandedOffIdentity(t *testing.T) {
	n := newCivNode(t)
	did, _ := n.bootstrap(map[string]any{"display_name": "Wanderer", "public_id": "wanderer"})
	own := n.agentToken("wanderer")
	other := eventlog.DIDKey(ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey))
	n.civSend(http.MethodPost, "/v1/civilization/controller-binding", own, map[string]any{"agent_did": did,
		"controller_kind": "remote_orchestrator", "controller_ref": "far-away", "node_id": other}).wantOK(t, nil)
	binding := n.civSend(http.MethodGet, "/v1/civilization/controller-binding?public_id=wanderer", testToken, nil).wantOK(t, nil).body
	tokensBefore := n.get("/v1/admin/tokens").wantOK(t, nil).body
	audited := len(n.auditEntries("token.*"))

	tip := n.log.Tip().Seq
	r := n.post("/v1/admin/tokens", testToken, `{"kind":"agent","acts_for":"wanderer"}`)
	r.wantError(t, http.StatusForbidden, "forbidden", "acts_for")
	if !strings.Contains(string(r.body), other) {
		t.Errorf("refusal %s does not name the node the identity was handed to", r.body)
	}
	if got := n.get("/v1/admin/tokens").wantOK(t, nil).body; string(got) != string(tokensBefore) {
		t.Errorf("tokens changed on a refused create:\n %s\n %s", tokensBefore, got)
	}
	if got := len(n.auditEntries("token.*")); got != audited {
		t.Errorf("token audit entries: %d before the refused create, %d after", audited, got)
	}

	// Neither the old agent token nor the owner can bind it back, or write for it.
	back := map[string]any{"agent_did": did, "controller_kind": "local_model", "controller_ref": "home"}
	for name, token := range map[string]string{"agent token issued before the hand-off": own, "owner": testToken} {
		t.Run(name, func(t *testing.T) {
			r := n.civSend(http.MethodPost, "/v1/civilization/controller-binding", token, back)
			r.wantError(t, http.StatusForbidden, "forbidden", "")
			n.civSend(http.MethodPost, "/v1/civilization/profile", token, map[string]any{"agent_did": did, "faction": "order"}).
				wantError(t, http.StatusForbidden, "forbidden", "")
			if got := n.log.Tip().Seq; got != tip {
				t.Errorf("tip moved from %d to %d on refused writes", tip, got)
			}
		})
	}
	if got := n.civSend(http.MethodGet, "/v1/civilization/controller-binding?public_id=wanderer", testToken, nil).wantOK(t, nil).body; string(got) != string(binding) {
		t.Errorf("binding changed:\n %s\n %s", binding, got)
	}
}
