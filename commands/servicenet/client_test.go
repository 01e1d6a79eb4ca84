package servicenet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClientNewChecksConfig(t *testing.T) {
	sign := func([]byte) []byte { return []byte{1} }
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no base", Config{Sign: sign}},
		{"ftp", Config{BaseURL: "ftp://r.example", Sign: sign}},
		{"no host", Config{BaseURL: "https:///v1", Sign: sign}},
		{"opaque", Config{BaseURL: "https:r.example", Sign: sign}},
		{"query", Config{BaseURL: "https://r.example/?a=1", Sign: sign}},
		{"empty query", Config{BaseURL: "https://r.example/?", Sign: sign}},
		{"fragment", Config{BaseURL: "https://r.example/#x", Sign: sign}},
		{"user info", Config{BaseURL: "https://u:pw-secret@r.example", Sign: sign}},
		{"not a URL", Config{BaseURL: "https://r.example/%zz", Sign: sign}},
		{"no signer", Config{BaseURL: "https://r.example"}},
		{"credential with a newline inside", Config{BaseURL: "https://r.example", Sign: sign, Credential: "abc\ndef"}},
	} {
		_, err := New(tc.cfg)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
		} else if strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "def") {
			t.Errorf("%s: message %q shows a secret", tc.name, err)
		}
	}

	c, err := New(Config{BaseURL: "HTTPS://Registry.example/a%20b/", Sign: sign, Credential: "tok\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.BaseURL(); got != "https://Registry.example/a%20b" {
		t.Errorf("BaseURL() = %q", got)
	}
	if c.credential != "tok" || c.retries != DefaultRetries || c.readTimeout != DefaultReadTimeout ||
		c.backoffBase != DefaultBackoffBase || c.backoffMax != DefaultBackoffMax || c.cards == nil || c.cards.ttl != DefaultCardTTL {
		t.Errorf("defaults not applied: %+v", c)
	}
	tr, ok := c.http.Transport.(*http.Transport)
	if !ok || tr.ResponseHeaderTimeout != DefaultReadTimeout || tr.TLSHandshakeTimeout != DefaultConnectTimeout {
		t.Errorf("default transport %+v", c.http.Transport)
	}
	c, _ = New(Config{BaseURL: "http://r.example", Sign: sign, Retries: -1, CardTTL: -1})
	if c.retries != 0 || c.cards != nil {
		t.Errorf("negative Retries/CardTTL not read as none: %d, %v", c.retries, c.cards)
	}
}

func TestClientListAgents(t *testing.T) {
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method != "GET" || r.URL.Path != "/v1/agents" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		writeJSON(w, 200, `{"agents":[
			{"agent_id":"a1","name":"Weather","description":"forecasts","requires_payment":true,"requires_oauth":false,"rank":7},
			{"agent_id":"a2","name":"Mail","requires_oauth":true,"description":null}
		],"next":null}`)
	})
	c, _ := newTestClient(t, testConfig(f))
	got, err := c.ListAgents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Summary{
		{AgentID: "a1", Name: "Weather", Description: "forecasts", RequiresPayment: true},
		{AgentID: "a2", Name: "Mail", RequiresOAuth: true},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ListAgents = %+v, want %+v", got, want)
	}
}

func TestClientCard(t *testing.T) {
	for _, tc := range []struct {
		body               string
		wantPaid, wantAuth bool
		wantSchema         string
	}{
		{`{"agent_id":"a1","name":"A"}`, false, false, ""},
		{`{"agent_id":"a1","name":"A","input_schema":null,"pricing":null}`, false, false, ""},
		{`{"agent_id":"a1","name":"A","input_schema":{"type":"object"},"pricing":{"currency":"USDC","rail":"x402"}}`, true, false, `{"type":"object"}`},
		{`{"agent_id":"a1","name":"A","pricing":{"currency":"USDC"},"requires_payment":false}`, false, false, ""},
		{`{"agent_id":"a1","name":"A","requires_payment":true}`, true, false, ""},
		{`{"agent_id":"a1","name":"A","security_schemes":{"oauth":{"type":"oauth2"}}}`, false, true, ""},
		{`{"agent_id":"a1","name":"A","security_schemes":null,"requires_oauth":true}`, false, false, ""},
	} {
		f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) { writeJSON(w, 200, tc.body) })
		c, _ := newTestClient(t, testConfig(f))
		card, err := c.Card(context.Background(), "a1")
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if card.RequiresPayment != tc.wantPaid || card.Paid() != tc.wantPaid || card.RequiresOAuth != tc.wantAuth || string(card.InputSchema) != tc.wantSchema {
			t.Errorf("%s: card %+v", tc.body, card)
		}
	}
}

// TestClientMalformedAnswers: a 2xx whose body is not the contract is
// ErrMalformed naming what was wrong, with the registry's status.
func TestClientMalformedAnswers(t *testing.T) {
	list := func(c *Client) error { _, err := c.ListAgents(context.Background()); return err }
	card := func(c *Client) error { _, err := c.Card(context.Background(), "a1"); return err }
	invoke := func(c *Client) error {
		_, err := c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m"}, nil)
		return err
	}
	task := func(c *Client) error { _, err := c.GetTask(context.Background(), "a1", "t1"); return err }
	for _, tc := range []struct {
		name string
		call func(*Client) error
		body string
		want string
	}{
		{"list not JSON", list, `<html>`, "not a JSON object"},
		{"list array", list, `[]`, "not a JSON object"},
		{"list null", list, `null`, "not a JSON object"},
		{"list trailing", list, `{"agents":[]} {}`, "not a JSON object"},
		{"list no agents", list, `{}`, `"agents" is missing`},
		{"list agents object", list, `{"agents":{}}`, `"agents" is not an array`},
		{"summary not object", list, `{"agents":[1]}`, "agents[0]: not a JSON object"},
		{"summary no id", list, `{"agents":[{"name":"A"}]}`, `agents[0]: member "agent_id" is missing`},
		{"summary bad id", list, `{"agents":[{"agent_id":"../x","name":"A"}]}`, `"agent_id" is not a valid id`},
		{"summary id number", list, `{"agents":[{"agent_id":7,"name":"A"}]}`, `"agent_id" is not a string`},
		{"summary second bad", list, `{"agents":[{"agent_id":"a","name":"A"},{"agent_id":"b"}]}`, `agents[1]: member "name" is missing`},
		{"summary flag string", list, `{"agents":[{"agent_id":"a","name":"A","requires_payment":"yes"}]}`, `"requires_payment" is not a boolean`},
		{"summary description number", list, `{"agents":[{"agent_id":"a","name":"A","description":1}]}`, `"description" is not a string`},
		{"card no name", card, `{"agent_id":"a1"}`, `card: member "name" is missing`},
		{"card other agent", card, `{"agent_id":"a2","name":"A"}`, `agent_id "a2" differs`},
		{"card schema array", card, `{"agent_id":"a1","name":"A","input_schema":[]}`, `"input_schema" is not an object`},
		{"card pricing string", card, `{"agent_id":"a1","name":"A","pricing":"1 USDC"}`, `"pricing" is not an object`},
		{"card schemes true", card, `{"agent_id":"a1","name":"A","security_schemes":true}`, `"security_schemes" is not an object`},
		{"card paid string", card, `{"agent_id":"a1","name":"A","requires_payment":"true"}`, `"requires_payment" is not a boolean`},
		{"invoke no status", invoke, `{"result":{}}`, `invoke answer: member "status" is missing`},
		{"invoke unknown status", invoke, `{"status":"done","result":{}}`, `unknown status "done"`},
		{"invoke failed", invoke, `{"status":"failed"}`, `unknown status "failed"`},
		{"invoke completed no result", invoke, `{"status":"completed"}`, `completed without an object "result"`},
		{"invoke completed string result", invoke, `{"status":"completed","result":"hi"}`, `"result" is not an object`},
		{"invoke accepted no task", invoke, `{"status":"accepted","receipt_id":"r1"}`, `"task_id" is missing`},
		{"invoke accepted no receipt", invoke, `{"status":"accepted","task_id":"t1"}`, `"receipt_id" is missing`},
		{"invoke accepted bad task", invoke, `{"status":"accepted","receipt_id":"r1","task_id":"t/1"}`, `"task_id" is not a valid id`},
		{"task other id", task, `{"task_id":"t2","status":"running"}`, `task_id "t2" differs`},
		{"task unknown status", task, `{"task_id":"t1","status":"queued"}`, `unknown status "queued"`},
		{"task completed no result", task, `{"task_id":"t1","status":"completed"}`, `completed without an object "result"`},
		{"task error number", task, `{"task_id":"t1","status":"failed","error":5}`, `"error" is not a string`},
		{"task status number", task, `{"task_id":"t1","status":1}`, `"status" is not a string`},
	} {
		f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) { writeJSON(w, 201, tc.body) })
		c, _ := newTestClient(t, testConfig(f))
		err := tc.call(c)
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrMalformed || e.Status != 201 || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %v, want ErrMalformed (201) mentioning %s", tc.name, err, tc.want)
		}
	}
}

func TestClientStatusMapping(t *testing.T) {
	for _, tc := range []struct {
		status     int
		header     string
		body       string
		kind       ErrorKind
		message    string
		retryAfter time.Duration
	}{
		{404, "", `{"error":"no such agent"}`, ErrNotFound, `does not know agent "a1"`, 0},
		{400, "", `{"error":"input.city is required"}`, ErrRejected, "input.city is required", 0},
		{422, "", `not json`, ErrRejected, "the registry refused the request (422)", 0},
		{400, "", `{"error":"` + strings.Repeat("é", 400) + `"}`, ErrRejected, strings.Repeat("é", 300) + "…", 0},
		{400, "", `{"error":"line\nbreak\u0000"}`, ErrRejected, "line break", 0},
		{401, "", `{}`, ErrUnavailable, "refused the node's credential", 0},
		{403, "", `{}`, ErrUnavailable, "refused the node's credential", 0},
		{429, "3", `{}`, ErrUnavailable, "answered 429", 3 * time.Second},
		{500, "", ``, ErrUnavailable, "answered 500", 0},
		{503, "", ``, ErrUnavailable, "answered 503", 0},
		{402, "", `{"x402Version":1,"accepts":[]}`, ErrMalformed, "answered 402", 0},
		{409, "", `{}`, ErrMalformed, "answered 409", 0},
		{418, "", `{}`, ErrMalformed, "answered 418", 0},
		{302, "", ``, ErrMalformed, "redirects are not followed", 0},
	} {
		f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
			if tc.header != "" {
				w.Header().Set("Retry-After", tc.header)
			}
			if tc.status == 302 {
				w.Header().Set("Location", "/elsewhere")
			}
			writeJSON(w, tc.status, tc.body)
		})
		c, _ := newTestClient(t, testConfig(f))
		_, err := c.Card(context.Background(), "a1")
		e := registryError(t, err, tc.kind)
		if e.Status != tc.status || !strings.Contains(e.Message, tc.message) || e.RetryAfter != tc.retryAfter {
			t.Errorf("%d: %+v, want status kept, message with %q, Retry-After %v", tc.status, e, tc.message, tc.retryAfter)
		}
	}

	// A 404 on the list is not "no such agent": the registry broke its contract.
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) { writeJSON(w, 404, `{}`) })
	c, _ := newTestClient(t, testConfig(f))
	_, err := c.ListAgents(context.Background())
	registryError(t, err, ErrMalformed)
	_, err = c.GetTask(context.Background(), "a1", "t1")
	if e := registryError(t, err, ErrNotFound); !strings.Contains(e.Message, `task "t1" of agent "a1"`) {
		t.Errorf("task 404: %q", e.Message)
	}
}

func b64JSON(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }

func TestClientInvoke(t *testing.T) {
	const settlement = `{"success":true,"transaction":"0xabc","network":"base-sepolia","payer":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C"}`
	var answer, receiptHeader string
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method != "POST" || r.URL.Path != "/v1/agents/a1/invoke" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		if receiptHeader != "" {
			w.Header().Set(receiptHeader, b64JSON(settlement))
		}
		writeJSON(w, 200, answer)
	})
	c, _ := newTestClient(t, testConfig(f))
	ctx := context.Background()

	answer = `{"status":"completed","result":{"temp":21},"cost":"ignored"}`
	req := InvokeRequest{Message: "weather in Oslo", Input: json.RawMessage(`{"city":"Oslo"}`)}
	r, err := c.Invoke(ctx, "a1", req, nil)
	if err != nil || r.Status != StatusCompleted || string(r.Result) != `{"temp":21}` || r.Settlement != nil {
		t.Fatalf("completed: %+v, %v", r, err)
	}
	if got := string(f.seen()[0].Body); got != `{"message":"weather in Oslo","input":{"city":"Oslo"}}` {
		t.Errorf("sent body %s", got)
	}

	answer = `{"status":"accepted","receipt_id":"rcpt:1","task_id":"task.1","result":null}`
	r, err = c.Invoke(ctx, "a1", InvokeRequest{Message: "m"}, nil)
	if err != nil || r.Status != StatusAccepted || r.ReceiptID != "rcpt:1" || r.TaskID != "task.1" || r.Result != nil {
		t.Fatalf("accepted: %+v, %v", r, err)
	}

	for _, h := range []string{"X-PAYMENT-RESPONSE", "PAYMENT-RESPONSE"} {
		receiptHeader = h
		answer = `{"status":"completed","result":{}}`
		r, err = c.Invoke(ctx, "a1", InvokeRequest{Message: "m"}, &PaymentHeader{Name: "PAYMENT-SIGNATURE", Value: "cGF5"})
		if err != nil || r.Settlement == nil || !r.Settlement.Success || r.Settlement.Transaction != "0xabc" {
			t.Fatalf("%s: %+v, %v", h, r, err)
		}
		if got := f.seen()[len(f.seen())-1].Header.Get("Payment-Signature"); got != "cGF5" {
			t.Errorf("payment header %q", got)
		}
	}

	// A receipt that cannot be read is not silently dropped.
	receiptHeader = ""
	f2 := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("X-PAYMENT-RESPONSE", "!!not base64")
		writeJSON(w, 200, `{"status":"completed","result":{}}`)
	})
	c2, _ := newTestClient(t, testConfig(f2))
	_, err = c2.Invoke(ctx, "a1", InvokeRequest{Message: "m"}, nil)
	registryError(t, err, ErrMalformed)

	// Only the two x402 header names may carry a payment.
	n := f.count()
	for _, p := range []*PaymentHeader{{Name: "Authorization", Value: "x"}, {Name: "X-PAYMENT"}} {
		if _, err := c.Invoke(ctx, "a1", InvokeRequest{Message: "m"}, p); err == nil {
			t.Errorf("payment header %+v accepted", p)
		}
	}
	if _, err := c.Invoke(ctx, "a1", InvokeRequest{Message: "m", Input: json.RawMessage(`{`)}, nil); err == nil {
		t.Error("invalid input JSON sent")
	}
	if f.count() != n {
		t.Error("a refused invoke reached the registry")
	}
}

const (
	clientV1Requirement = `{"scheme":"exact","network":"base-sepolia","maxAmountRequired":"10000",` +
		`"resource":"https://registry.example/v1/agents/a1/invoke","description":"weather","mimeType":"application/json",` +
		`"payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","maxTimeoutSeconds":60,` +
		`"asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","extra":{"name":"USDC","version":"2"}}`
	clientV2Required = `{"x402Version":2,"resource":{"url":"https://registry.example/v1/agents/a1/invoke"},"accepts":[` +
		`{"scheme":"exact","network":"eip155:84532","amount":"10000",` +
		`"payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","maxTimeoutSeconds":60,` +
		`"asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","extra":{"name":"USDC","version":"2"}}]}`
)

func TestClientInvokePaymentRequired(t *testing.T) {
	for _, tc := range []struct {
		name     string
		header   string
		body     string
		payment  *PaymentHeader
		kind     ErrorKind
		version  int
		contains string
	}{
		{"v1", "", `{"x402Version":1,"error":"X-PAYMENT header is required","accepts":[` + clientV1Requirement + `]}`, nil,
			ErrPaymentRequired, 1, "the agent requires payment: X-PAYMENT header is required"},
		{"v2", b64JSON(clientV2Required), `{}`, nil, ErrPaymentRequired, 2, "the agent requires payment"},
		{"refused payment", "", `{"x402Version":1,"error":"insufficient_funds","accepts":[` + clientV1Requirement + `]}`,
			&PaymentHeader{Name: "X-PAYMENT", Value: "cGF5"}, ErrPaymentRequired, 1, "refused the payment: insufficient_funds"},
		{"no requirements", "", `{"error":"pay"}`, nil, ErrMalformed, 0, "x402"},
		{"bad v2 header", "%%%", `{}`, nil, ErrMalformed, 0, "PAYMENT-REQUIRED"},
	} {
		f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
			if tc.header != "" {
				w.Header().Set("PAYMENT-REQUIRED", tc.header)
			}
			writeJSON(w, 402, tc.body)
		})
		cfg := testConfig(f)
		cfg.Retries = 3
		c, _ := newTestClient(t, cfg)
		_, err := c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m"}, tc.payment)
		e := registryError(t, err, tc.kind)
		if e.Status != 402 || !strings.Contains(e.Message, tc.contains) || f.count() != 1 {
			t.Errorf("%s: %+v after %d attempts", tc.name, e, f.count())
		}
		if tc.kind == ErrPaymentRequired && (e.Payment == nil || e.Payment.Version != tc.version || len(e.Payment.Accepts) != 1 || e.Payment.Accepts[0].Amount != "10000") {
			t.Errorf("%s: payment %+v", tc.name, e.Payment)
		}
	}
}

func TestClientAnswerSizeLimit(t *testing.T) {
	// A card padded to exactly 1 MiB is read; one byte more is refused.
	card := func(size int) string {
		head, tail := `{"agent_id":"a1","name":"A","description":"`, `"}`
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		size int
		ok   bool
	}{{maxAnswerBytes, true}, {maxAnswerBytes + 1, false}} {
		body := card(tc.size)
		f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, _ []byte) { writeJSON(w, 200, body) })
		c, _ := newTestClient(t, testConfig(f))
		_, err := c.Card(context.Background(), "a1")
		if tc.ok && err != nil {
			t.Errorf("%d bytes: %v", tc.size, err)
		}
		if !tc.ok {
			if e := registryError(t, err, ErrMalformed); e.Message != "registry answer larger than 1 MiB" {
				t.Errorf("%d bytes: %q", tc.size, e.Message)
			}
		}
	}
}

// TestClientLogsNoSecrets: the Debug lines name the call, never its body,
// headers, token or payment.
func TestClientLogsNoSecrets(t *testing.T) {
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		writeJSON(w, 503, `{"error":"`+testCredential+`"}`)
	})
	var buf bytes.Buffer
	cfg := testConfig(f)
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Retries = 1
	c, _ := newTestClient(t, cfg)
	c.Invoke(context.Background(), "a1", InvokeRequest{Message: "private words", AuthToken: "oauth-771"}, &PaymentHeader{Name: "X-PAYMENT", Value: "cGF5bWVudA=="})
	c.GetTask(context.Background(), "a1", "t1")
	out := buf.String()
	for _, secret := range []string{testCredential, "oauth-771", "cGF5bWVudA==", "private words", "Bearer", "X-Node-Signature"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"method=POST", "path=/v1/agents/a1/invoke", "status=503", "attempt=2", "registry retry"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
