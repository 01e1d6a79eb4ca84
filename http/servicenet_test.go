package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
)

// The registry proxy and the payment-account endpoints through the real
// server, the node wired by core.Open with a registry client pointed at a
// fake registry (servicenettest).

type snHTTPNode struct {
	*testNode
	core   *core.Core
	reg    *servicenettest.Registry
	keyDir string
	logs   *logBuffer
}

func newSNHTTPNode(t *testing.T) *snHTTPNode {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	pub := key.Public().(ed25519.PublicKey)
	logs := &logBuffer{}
	logger := debugLogger(logs)
	reg := servicenettest.New(t, servicenettest.Options{NodeKey: pub, NodeDID: eventlog.DIDKey(pub)})
	client, err := servicenet.New(servicenet.Config{BaseURL: reg.URL, NodeDID: eventlog.DIDKey(pub),
		Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }, ReadTimeout: 200 * time.Millisecond,
		Retries: -1, CardTTL: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	keyDir := filepath.Join(t.TempDir(), "wallets")
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: logger},
		core.Config{Keys: servicenet.NewKeystore(keyDir), Registry: client})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := New(wired(Options{OwnerToken: testToken, Logger: logger}, c))
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &snHTTPNode{testNode: &testNode{t: t, log: c.Log, srv: s, url: hs.URL}, core: c, reg: reg, keyDir: keyDir, logs: logs}
}

// wantBody checks the status and that the body is exactly want (compared as
// JSON, so member order and spacing do not count).
func (r response) wantBody(t *testing.T, status int, want string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var got, exp any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	g, _ := json.Marshal(got)
	e, _ := json.Marshal(exp)
	if !bytes.Equal(g, e) {
		t.Errorf("body = %s\nwant   %s", r.body, e)
	}
}

// wantErrorBody checks an error's status, code and field, and returns the body's
// members.
func (r response) wantErrorBody(t *testing.T, status int, code, field string) map[string]json.RawMessage {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	var m map[string]json.RawMessage
	r.decode(t, &m)
	var gotCode, gotField, msg string
	json.Unmarshal(m["code"], &gotCode)
	json.Unmarshal(m["field"], &gotField)
	json.Unmarshal(m["error"], &msg)
	if gotCode != code || gotField != field || msg == "" {
		t.Errorf("error body %s, want code %q field %q", r.body, code, field)
	}
	return m
}

const snPath = "/v1/core/servicenet/agents"

func TestServicenetHTTPRoutes(t *testing.T) {
	n := newSNHTTPNode(t)
	n.reg.Add(servicenettest.Agent{ID: "echo", Description: "Says it back", Result: json.RawMessage(`{"echo":"hi"}`)})
	n.reg.Add(servicenettest.Agent{ID: "slow", Async: &servicenettest.Async{RunningPolls: 1, Result: json.RawMessage(`{"n":3}`)}})
	n.reg.Add(servicenettest.Agent{ID: "doomed", Async: &servicenettest.Async{Error: "out of quota"}})
	n.reg.Add(servicenettest.Agent{ID: "mail", SecuritySchemes: json.RawMessage(`{"o":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://a.example/token","scopes":["send"]}}}}`)})

	n.get(snPath).wantBody(t, 200, `{"agents":[
		{"agent_id":"echo","name":"echo","description":"Says it back","requires_payment":false,"requires_oauth":false},
		{"agent_id":"slow","name":"slow","description":"","requires_payment":false,"requires_oauth":false},
		{"agent_id":"doomed","name":"doomed","description":"","requires_payment":false,"requires_oauth":false},
		{"agent_id":"mail","name":"mail","description":"","requires_payment":false,"requires_oauth":true}]}`)
	n.get(snPath+"/echo").wantBody(t, 200, `{"agent_id":"echo","name":"echo","description":"Says it back",
		"input_schema":null,"pricing":null,"requires_payment":false,"requires_oauth":false}`)

	tip := n.log.Tip().Seq
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi","input":{"a":1}}`).
		wantBody(t, 200, `{"status":"completed","result":{"echo":"hi"}}`)
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi","input":null}`).
		wantBody(t, 200, `{"status":"completed","result":{"echo":"hi"}}`)
	n.post(snPath+"/slow/invoke", testToken, `{"message":"hi"}`).
		wantBody(t, 200, `{"status":"accepted","receipt_id":"rcpt-1","task_id":"task-1"}`)
	n.post(snPath+"/slow/tasks/task-1/get", testToken, `{}`).wantBody(t, 200, `{"task_id":"task-1","status":"running"}`)
	n.post(snPath+"/slow/tasks/task-1/get", testToken, `{}`).
		wantBody(t, 200, `{"task_id":"task-1","status":"completed","result":{"n":3}}`)
	n.post(snPath+"/doomed/invoke", testToken, `{"message":"hi"}`).
		wantBody(t, 200, `{"status":"accepted","receipt_id":"rcpt-2","task_id":"task-2"}`)
	n.post(snPath+"/doomed/tasks/task-2/get", testToken, `{}`).
		wantBody(t, 200, `{"task_id":"task-2","status":"failed","error":"out of quota"}`)
	n.post(snPath+"/mail/invoke", testToken, `{"message":"hi"}`).
		wantBody(t, 200, `{"authorizationUrl":"","tokenUrl":"https://a.example/token","scopes":["send"]}`)
	var types []string
	n.log.Scan(tip+1, n.log.Tip().Seq, func(ev *eventlog.Event) error { types = append(types, ev.Type); return nil })
	if got := strings.Join(types, " "); got != "servicenet.invoked servicenet.invoked servicenet.invoked "+
		"servicenet.task.completed servicenet.invoked servicenet.task.failed" {
		t.Errorf("events = %s", got)
	}

	// Refusals of the body, before the registry.
	before := len(n.reg.Requests())
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi","inptu":{}}`).wantError(t, 400, "unknown_field", "inptu")
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi","settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","bogus":1}}}`).
		wantError(t, 400, "unknown_field", "bogus")
	n.post(snPath+"/echo/invoke", testToken, `{"input":{}}`).wantError(t, 400, "missing_field", "message")
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi","input":[1]}`).wantError(t, 400, "invalid_field", "input")
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi","settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"ghost","network":"base"}}}`).
		wantError(t, 400, "unknown_payment_account", "settlement.request.payment_account_ref")
	n.post(snPath+"/slow/tasks/task-1/get", testToken, ``).wantError(t, 400, "invalid_json", "")
	n.post(snPath+"/slow/tasks/task-1/get", testToken, `{"x":1}`).wantError(t, 400, "unknown_field", "x")
	for _, p := range []string{snPath + "/../invoke", snPath + "/%2e%2e/invoke", snPath + "/a%3Fb/invoke", snPath + "/a%20b/invoke"} {
		n.post(p, testToken, `{"message":"hi"}`).wantError(t, 400, "invalid_field", "agent_id")
	}
	n.post(snPath+"/slow/tasks/%2e%2e/get", testToken, `{}`).wantError(t, 400, "invalid_field", "task_id")
	n.request(http.MethodGet, snPath+"/%2e%2e", testToken, nil).wantError(t, 400, "invalid_field", "agent_id")
	if after := len(n.reg.Requests()); after != before {
		t.Errorf("refused requests reached the registry: %d", after-before)
	}
	if n.log.Tip().Seq != tip+6 {
		t.Errorf("refusals appended events")
	}
}

func TestServicenetHTTPAuth(t *testing.T) {
	n := newSNHTTPNode(t)
	n.reg.Add(servicenettest.Agent{ID: "echo"})
	obs, err := n.core.Tokens.Create(context.Background(), commands.Actor{TokenID: "owner", Kind: commands.ActorOwner}, commands.TokenKindObserver, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, snPath, ""},
		{http.MethodGet, snPath + "/echo", ""},
		{http.MethodPost, snPath + "/echo/invoke", `{"message":"hi"}`},
		{http.MethodPost, snPath + "/echo/tasks/t1/get", `{}`},
		{http.MethodGet, "/v1/admin/payment-accounts", ""},
		{http.MethodPost, "/v1/admin/payment-accounts", `{"ref":"x"}`},
	} {
		n.request(c.method, c.path, "", strings.NewReader(c.body)).wantError(t, 401, "unauthorized", "")
		n.request(c.method, c.path, "wrong", strings.NewReader(c.body)).wantError(t, 401, "unauthorized", "")
		n.request(c.method, c.path, obs.Secret, strings.NewReader(c.body)).wantError(t, 403, "forbidden", "")
	}
	if q := n.reg.Requests(); len(q) != 0 {
		t.Errorf("unauthorised requests reached the registry: %d", len(q))
	}
	if len(n.core.PaymentAccounts.List()) != 0 {
		t.Errorf("an observer created an account")
	}
	// The registry never sees the control token.
	n.post(snPath+"/echo/invoke", testToken, `{"message":"hi"}`).wantBody(t, 200, `{"status":"completed","result":{"answer":"42"}}`)
	for _, q := range n.reg.Requests() {
		for k, vs := range q.Header {
			for _, v := range vs {
				if strings.Contains(v, testToken) {
					t.Errorf("the registry got the control token in %s", k)
				}
			}
		}
		if bytes.Contains(q.Body, []byte(testToken)) {
			t.Errorf("the registry got the control token in the body")
		}
	}
}

func TestServicenetHTTPErrors(t *testing.T) {
	n := newSNHTTPNode(t)
	pricing := `{"currency":"USDC","rail":"x402","network":"base-sepolia","amount":"10000"}`
	n.reg.Add(servicenettest.Agent{ID: "paid", Pricing: json.RawMessage(pricing), Price: &servicenettest.Price{Version: 1}})
	n.reg.Add(servicenettest.Agent{ID: "typed", InputSchema: json.RawMessage(
		`{"type":"object","required":["city"],"properties":{"days":{"type":"integer","minimum":1}}}`)})
	n.reg.Add(servicenettest.Agent{ID: "down", InvokeFault: &servicenettest.Fault{Status: 503}})
	n.reg.Add(servicenettest.Agent{ID: "garbled", InvokeFault: &servicenettest.Fault{Status: 200, Body: []byte(`{"status":"accepted","receipt_id":"r"}`)}})
	n.reg.Add(servicenettest.Agent{ID: "hung", InvokeFault: &servicenettest.Fault{Delay: time.Minute}})
	n.reg.Add(servicenettest.Agent{ID: "picky", InvokeFault: &servicenettest.Fault{Status: 400, Body: []byte(`{"error":"too long"}`)}})
	tip := n.log.Tip().Seq

	m := n.post(snPath+"/paid/invoke", testToken, `{"message":"hi"}`).wantErrorBody(t, 400, "settlement_required", "settlement")
	if string(m["pricing"]) != pricing || len(m) != 4 {
		t.Errorf("settlement_required body = %v", m)
	}
	if n.reg.Count(servicenettest.RouteInvoke, "paid") != 0 {
		t.Errorf("the paid agent was invoked")
	}
	m = n.post(snPath+"/typed/invoke", testToken, `{"message":"hi","input":{"days":0}}`).wantErrorBody(t, 400, "invalid_input", "input")
	var vs []struct{ Path, Message string }
	if err := json.Unmarshal(m["violations"], &vs); err != nil || len(vs) != 2 || len(m) != 4 {
		t.Errorf("invalid_input body: violations %s (%v), %d members", m["violations"], err, len(m))
	}
	n.post(snPath+"/down/invoke", testToken, `{"message":"hi"}`).wantError(t, 502, "registry_unavailable", "")
	n.post(snPath+"/garbled/invoke", testToken, `{"message":"hi"}`).wantError(t, 502, "registry_bad_response", "")
	n.post(snPath+"/hung/invoke", testToken, `{"message":"hi"}`).wantError(t, 504, "registry_timeout", "")
	n.post(snPath+"/picky/invoke", testToken, `{"message":"hi"}`).wantError(t, 400, "registry_rejected", "")
	n.post(snPath+"/nobody/invoke", testToken, `{"message":"hi"}`).wantError(t, 404, "agent_not_found", "agent_id")
	n.get(snPath+"/nobody").wantError(t, 404, "agent_not_found", "agent_id")
	n.post(snPath+"/paid/tasks/t9/get", testToken, `{}`).wantError(t, 404, "task_not_found", "task_id")
	if n.log.Tip().Seq != tip {
		t.Errorf("failed calls appended events")
	}

	// Paying: over the per-payment limit is 403 with the limit, unsigned.
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"tight","max_per_payment":"100"}`).wantOK(t, nil)
	settle := `,"settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"tight","network":"base-sepolia"}}`
	m = n.post(snPath+"/paid/invoke", testToken, `{"message":"hi"`+settle+`}`).
		wantErrorBody(t, 403, "spending_limit", "settlement.request.payment_account_ref")
	if string(m["amount"]) != `"10000"` || string(m["max"]) != `"100"` || string(m["limit"]) != `"max_per_payment"` {
		t.Errorf("spending_limit body %v", m)
	}
	if n.reg.PaidAttempts() != 0 || n.log.Tip().Seq != tip {
		t.Errorf("a refused payment was sent or recorded")
	}
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"main"}`).wantOK(t, nil)
	n.post(snPath+"/paid/invoke", testToken, `{"message":"hi"`+strings.Replace(settle, "tight", "main", 1)+`}`).
		wantBody(t, 200, `{"status":"completed","result":{"answer":"42"}}`)
	if len(n.reg.Settlements()) != 1 {
		t.Errorf("settlements = %v, refusals %v", n.reg.Settlements(), n.reg.Refusals())
	}
}

// TestServicenetHTTPOAuthTokenStaysPrivate: an OAuth token sent to invoke
// reaches the registry and appears in no event, audit entry, answer or log.
func TestServicenetHTTPOAuthTokenStaysPrivate(t *testing.T) {
	n := newSNHTTPNode(t)
	n.reg.Add(servicenettest.Agent{ID: "mail", Async: &servicenettest.Async{},
		SecuritySchemes: json.RawMessage(`{"o":{"type":"oauth2","flows":{"implicit":{"authorizationUrl":"https://a.example/auth","tokenUrl":"https://a.example/token","scopes":{}}}}}`)})
	const token = "gho_OAUTH-HTTP-SECRET-91c2"
	r := n.post(snPath+"/mail/invoke", testToken, `{"message":"hi","auth_token":"`+token+`"}`)
	r.wantBody(t, 200, `{"status":"accepted","receipt_id":"rcpt-1","task_id":"task-1"}`)
	n.post(snPath+"/mail/tasks/task-1/get", testToken, `{}`).wantBody(t, 200, `{"task_id":"task-1","status":"completed","result":{"answer":"42"}}`)
	n.reg.Update("mail", func(a *servicenettest.Agent) {
		a.InvokeFault = &servicenettest.Fault{Status: 400, Body: []byte(`{"error":"bad token ` + token + `"}`)}
	})
	r = n.post(snPath+"/mail/invoke", testToken, `{"message":"hi","auth_token":"`+token+`"}`)
	r.wantError(t, 400, "registry_rejected", "")
	if containsBytes(r.body, token) {
		t.Errorf("the answer relays the token: %s", r.body)
	}
	if inv := n.reg.Invocations("mail"); len(inv) != 2 || inv[0].AuthToken != token {
		t.Errorf("invocations = %+v", inv)
	}
	n.get("/v1/events?limit=1000").wantOK(t, nil)
	n.log.Scan(1, n.log.Tip().Seq, func(ev *eventlog.Event) error {
		if bytes.Contains(ev.Raw(), []byte(token)) {
			t.Errorf("event %d holds the token", ev.Seq)
		}
		return nil
	})
	for _, e := range n.auditEntries("") {
		if bytes.Contains(e.Detail, []byte(token)) {
			t.Errorf("audit %s holds the token", e.Action)
		}
	}
	if !strings.Contains(n.logs.String(), "registry attempt") {
		t.Fatalf("no debug log captured")
	}
	if strings.Contains(n.logs.String(), token) {
		t.Errorf("the log holds the token")
	}
}

func TestPaymentAccountsHTTP(t *testing.T) {
	n := newSNHTTPNode(t)
	tip := n.log.Tip().Seq
	r := n.post("/v1/admin/payment-accounts", testToken, `{"ref":"main","max_per_payment":"1000000","max_per_day":"123456789012345678901234567890"}`)
	var acct map[string]any
	r.wantOK(t, &acct)
	wantKeys(t, acct, "ref", "address", "max_per_payment", "max_per_day", "created_at")
	addr, _ := acct["address"].(string)
	if !regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`).MatchString(addr) || acct["ref"] != "main" ||
		acct["max_per_payment"] != "1000000" || acct["max_per_day"] != "123456789012345678901234567890" {
		t.Errorf("created = %s", r.body)
	}
	keyFile := filepath.Join(n.keyDir, "main.key")
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v %v", keyFile, fi, err)
	}
	if di, err := os.Stat(n.keyDir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("key dir mode %v %v", di, err)
	}
	key, _ := os.ReadFile(keyFile)
	secret := strings.TrimSpace(string(key))
	if len(secret) != 64 {
		t.Fatalf("key file holds %d characters", len(secret))
	}

	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"spare"}`).wantOK(t, nil)
	list := n.get("/v1/admin/payment-accounts")
	list.wantBody(t, 200, `{"payment_accounts":[
		{"ref":"main","address":"`+addr+`","max_per_payment":"1000000","max_per_day":"123456789012345678901234567890","created_at":`+string(mustJSON(t, acct["created_at"]))+`},
		{"ref":"spare","address":`+string(mustJSON(t, n.core.PaymentAccounts.List()[1].Address))+`,"max_per_payment":null,"max_per_day":null,"created_at":`+
		string(mustJSON(t, formatTime(n.core.PaymentAccounts.List()[1].CreatedAt)))+`}]}`)

	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"main"}`).wantError(t, 409, "payment_account_exists", "ref")
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"../etc"}`).wantError(t, 400, "invalid_field", "ref")
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"b","max_per_day":5}`).wantError(t, 400, "invalid_field", "max_per_day")
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"b","max_per_day":"-5"}`).wantError(t, 400, "invalid_field", "max_per_day")
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"b","key":"00"}`).wantError(t, 400, "unknown_field", "key")
	n.post("/v1/admin/payment-accounts", testToken, `{}`).wantError(t, 400, "missing_field", "ref")

	// The key is in its file only: no answer, event, audit entry or log line.
	for _, b := range [][]byte{r.body, list.body, n.get("/v1/audit?limit=1000").body, n.get("/v1/events?limit=1000").body, []byte(n.logs.String())} {
		if bytes.Contains(bytes.ToLower(b), []byte(secret)) {
			t.Errorf("the key leaked into %s", b)
		}
	}
	if n.log.Tip().Seq != tip {
		t.Errorf("creating accounts appended chain events")
	}
	if es := n.auditEntries("payment_account.created"); len(es) != 2 || !strings.HasPrefix(es[0].Actor, "token:") {
		t.Errorf("audit = %+v", es)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServicenetHTTPWalletUnusable: a payment account whose key file others
// may read is not signed with, and the client is told why (500
// wallet_unusable, with what to do) without the path of the key file;
// nothing is appended. Fixed, the same call pays.
func TestServicenetHTTPWalletUnusable(t *testing.T) {
	n := newSNHTTPNode(t)
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 1}})
	n.post("/v1/admin/payment-accounts", testToken, `{"ref":"main"}`).wantOK(t, nil)
	keyFile := filepath.Join(n.keyDir, "main.key")
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip().Seq
	body := `{"message":"hi","settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"main","network":"base-sepolia"}}}`
	r := n.post(snPath+"/paid/invoke", testToken, body)
	m := r.wantErrorBody(t, 500, "wallet_unusable", "")
	var msg string
	json.Unmarshal(m["error"], &msg)
	if !strings.Contains(msg, "chmod 600") || !strings.Contains(msg, "main") || strings.Contains(string(r.body), n.keyDir) || strings.Contains(string(r.body), "wallets") {
		t.Errorf("message %q: want the account, the fix, and no path", msg)
	}
	if n.log.Tip().Seq != tip || n.reg.PaidAttempts() != 0 {
		t.Errorf("an unusable wallet appended %d events or paid %d times", n.log.Tip().Seq-tip, n.reg.PaidAttempts())
	}
	if !strings.Contains(n.logs.String(), keyFile) {
		t.Errorf("the node's log does not name the key file for its operator")
	}
	if err := os.Chmod(keyFile, 0o600); err != nil {
		t.Fatal(err)
	}
	n.post(snPath+"/paid/invoke", testToken, body).wantOK(t, nil)
}

// TestErrorTextIsBounded: an error repeats at most errorQuote bytes of any
// one value it quotes, cut on a character boundary with "…", and at most
// commands.MaxErrorText bytes in all: a 60 KiB mission id in a 404, a
// 100,000-character input in invalid_input's violations.
func TestErrorTextIsBounded(t *testing.T) {
	n := newSNHTTPNode(t)
	n.reg.Add(servicenettest.Agent{ID: "typed", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string","pattern":"^a$"},"mail":{"format":"email"}}}`)})
	long := strings.Repeat("é", 50_000) // 100,000 bytes, two per character
	id := strings.Repeat("m", 60<<10)
	r := n.get("/v1/core/missions/" + id)
	m := r.wantErrorBody(t, 404, "mission_not_found", "")
	checkBounded(t, "mission_not_found", m["error"], "m")

	r = n.post(snPath+"/typed/invoke", testToken, `{"message":"hi","input":{"text":"`+long+`","mail":"`+long+`"}}`)
	m = r.wantErrorBody(t, 400, "invalid_input", "input")
	var vs []struct{ Path, Message string }
	if err := json.Unmarshal(m["violations"], &vs); err != nil || len(vs) == 0 {
		t.Fatalf("violations %s: %v", m["violations"], err)
	}
	for _, v := range vs {
		b, _ := json.Marshal(v.Message)
		checkBounded(t, "violation", b, "é")
	}
	if len(r.body) > 4096 {
		t.Errorf("the invalid_input answer is %d bytes", len(r.body))
	}
}

// checkBounded checks that the JSON string raw repeats at most
// commands.MaxErrorQuote bytes of the run of rep and is valid UTF-8 with
// "…" where it was cut.
func checkBounded(t *testing.T, what string, raw json.RawMessage, rep string) {
	t.Helper()
	var msg string
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg) > commands.MaxErrorText+len("…") {
		t.Errorf("%s: message of %d bytes", what, len(msg))
	}
	if strings.Contains(msg, strings.Repeat(rep, commands.MaxErrorQuote/len(rep)+1)) {
		t.Errorf("%s: message repeats more than %d bytes of the value: %.300s", what, commands.MaxErrorQuote, msg)
	}
	if !strings.Contains(msg, rep+"…") || !utf8.ValidString(msg) {
		t.Errorf("%s: message %.300q is not cut with … on a character boundary", what, msg)
	}
}
