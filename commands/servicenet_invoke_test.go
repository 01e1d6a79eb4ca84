package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog/events"
)

func TestServicenetSyncInvoke(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "echo", Result: json.RawMessage(`{"z":1,"a":[true,"\u00e9"],"m":{"y":2,"b":null}}`)})
	tip := n.log.Tip().Seq

	res, err := n.invoke("echo", `{"q":"weather","n":1.50}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || string(res.Result) != `{"z":1,"a":[true,"\u00e9"],"m":{"y":2,"b":null}}` ||
		res.ReceiptID != "" || res.TaskID != "" || res.OAuth != nil || res.PaymentID != "" {
		t.Errorf("result = %+v (result %s)", res, res.Result)
	}
	if b, _ := json.Marshal(res.Body()); string(b) != `{"status":"completed","result":{"z":1,"a":[true,"\u00e9"],"m":{"y":2,"b":null}}}` {
		t.Errorf("body = %s", b)
	}
	evs := n.events(tip)
	if len(evs) != 1 || evs[0].Type != events.TypeServicenetInvoked || len(res.Events) != 1 || res.Events[0].Seq != evs[0].Seq {
		t.Fatalf("events = %v, result events %d", n.types(tip), len(res.Events))
	}
	got := payloadOf[events.ServicenetInvoked](t, evs[0])
	wantReq := canonicalSHA256(t, `{"message":"hello","input":{"q":"weather","n":1.5}}`)
	wantRes := canonicalSHA256(t, `{"a":[true,"é"],"m":{"b":null,"y":2},"z":1}`)
	want := events.ServicenetInvoked{AgentID: "echo", InvokedBy: n.log.NodeDID(), TokenID: "owner",
		RequestSHA256: wantReq, Status: "completed", ResultSHA256: &wantRes}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("servicenet.invoked = %+v\nwant %+v", got, want)
	}
	// The registry got the card read and one invoke, with the input as sent.
	if c, i := n.reg.Count(servicenettest.RouteCard, "echo"), n.reg.Count(servicenettest.RouteInvoke, "echo"); c != 1 || i != 1 {
		t.Errorf("registry saw %d card and %d invoke requests", c, i)
	}
	inv := n.reg.Invocations("echo")
	if len(inv) != 1 || inv[0].Message != "hello" || string(inv[0].Input) != `{"q":"weather","n":1.50}` || inv[0].AuthToken != "" {
		t.Errorf("invocations = %+v", inv)
	}

	// No input: the request digest has input null, and no input is sent.
	tip = n.log.Tip().Seq
	if _, err := n.invoke("echo", ""); err != nil {
		t.Fatal(err)
	}
	got = payloadOf[events.ServicenetInvoked](t, n.ofType(tip, events.TypeServicenetInvoked)[0])
	if want := canonicalSHA256(t, `{"input":null,"message":"hello"}`); got.RequestSHA256 != want {
		t.Errorf("request_sha256 without input = %s, want %s", got.RequestSHA256, want)
	}
	q := n.reg.Requests()
	if last := q[len(q)-1]; strings.Contains(string(last.Body), "input") {
		t.Errorf("invoke body without input = %s", last.Body)
	}

	// An agent token invokes as its identity.
	tip = n.log.Tip().Seq
	if _, err := n.sn.Invoke(context.Background(), agentActor("did:key:z6MkAgent"), "echo",
		commands.InvokeInput{Message: ptr("hi")}); err != nil {
		t.Fatal(err)
	}
	got = payloadOf[events.ServicenetInvoked](t, n.ofType(tip, events.TypeServicenetInvoked)[0])
	if got.InvokedBy != "did:key:z6MkAgent" || got.TokenID != "agent" {
		t.Errorf("agent invoke recorded as %q token %q", got.InvokedBy, got.TokenID)
	}
}

// TestServicenetBodyChecks: every refusal of the body alone comes before the
// registry is called.
func TestServicenetBodyChecks(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 1}})
	n.account("main", "", "")
	tip := n.log.Tip().Seq
	valid := func() *commands.SettlementInput {
		return &commands.SettlementInput{Layer: ptr("web3"), Rail: ptr("x402"), Request: &commands.SettlementRequestInput{
			Protocol: ptr("x402"), PaymentAccountRef: ptr("main"), Network: ptr("base-sepolia")}}
	}
	for _, c := range []struct {
		name        string
		edit        func(*commands.InvokeInput)
		kind        commands.Kind
		code, field string
	}{
		{"no message", func(in *commands.InvokeInput) { in.Message = nil }, commands.KindInvalid, "missing_field", "message"},
		{"empty message", func(in *commands.InvokeInput) { in.Message = ptr("") }, commands.KindInvalid, "invalid_field", "message"},
		{"input not an object", func(in *commands.InvokeInput) { in.Input = json.RawMessage(`[1]`) }, commands.KindInvalid, "invalid_field", "input"},
		{"input a string", func(in *commands.InvokeInput) { in.Input = json.RawMessage(`"x"`) }, commands.KindInvalid, "invalid_field", "input"},
		{"empty auth_token", func(in *commands.InvokeInput) { in.AuthToken = ptr("") }, commands.KindInvalid, "invalid_field", "auth_token"},
		{"no layer", func(in *commands.InvokeInput) { in.Settlement.Layer = nil }, commands.KindInvalid, "missing_field", "settlement.layer"},
		{"layer web2", func(in *commands.InvokeInput) { in.Settlement.Layer = ptr("web2") }, commands.KindInvalid, "invalid_field", "settlement.layer"},
		{"no rail", func(in *commands.InvokeInput) { in.Settlement.Rail = nil }, commands.KindInvalid, "missing_field", "settlement.rail"},
		{"rail card", func(in *commands.InvokeInput) { in.Settlement.Rail = ptr("card") }, commands.KindInvalid, "invalid_field", "settlement.rail"},
		{"no request", func(in *commands.InvokeInput) { in.Settlement.Request = nil }, commands.KindInvalid, "missing_field", "settlement.request"},
		{"no protocol", func(in *commands.InvokeInput) { in.Settlement.Request.Protocol = nil }, commands.KindInvalid, "missing_field", "settlement.request.protocol"},
		{"protocol l402", func(in *commands.InvokeInput) { in.Settlement.Request.Protocol = ptr("l402") }, commands.KindInvalid, "invalid_field", "settlement.request.protocol"},
		{"no account", func(in *commands.InvokeInput) { in.Settlement.Request.PaymentAccountRef = nil }, commands.KindInvalid, "missing_field", "settlement.request.payment_account_ref"},
		{"no network", func(in *commands.InvokeInput) { in.Settlement.Request.Network = nil }, commands.KindInvalid, "missing_field", "settlement.request.network"},
		{"network solana", func(in *commands.InvokeInput) { in.Settlement.Request.Network = ptr("solana") }, commands.KindInvalid, "invalid_field", "settlement.request.network"},
		{"unknown account", func(in *commands.InvokeInput) { in.Settlement.Request.PaymentAccountRef = ptr("nope") },
			commands.KindInvalid, "unknown_payment_account", "settlement.request.payment_account_ref"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := commands.InvokeInput{Message: ptr("hello"), Settlement: valid()}
			c.edit(&in)
			_, err := n.sn.Invoke(context.Background(), owner, "paid", in)
			n.refused(err, tip, c.kind, c.code, c.field)
		})
	}
	// An agent token may not spend the node's accounts.
	_, err := n.sn.Invoke(context.Background(), agentActor("did:key:z6MkAgent"), "paid",
		commands.InvokeInput{Message: ptr("hello"), Settlement: valid()})
	n.refused(err, tip, commands.KindForbidden, "forbidden", "")
	if q := n.reg.Requests(); len(q) != 0 {
		t.Errorf("the registry was called %d times for refused bodies: %+v", len(q), q[0])
	}
}

func TestServicenetSettlementRequired(t *testing.T) {
	n := newSNNode(t, snConfig{})
	pricing := `{"currency":"USDC","rail":"x402","network":"base-sepolia","amount":"10000"}`
	n.reg.Add(servicenettest.Agent{ID: "paid", Pricing: json.RawMessage(pricing), Price: &servicenettest.Price{Version: 1}})
	tip := n.log.Tip().Seq
	_, err := n.invoke("paid", "")
	ce := n.refused(err, tip, commands.KindInvalid, "settlement_required", "settlement")
	if p, ok := ce.Details["pricing"].(json.RawMessage); !ok || string(p) != pricing {
		t.Errorf("details = %#v, want the card's pricing", ce.Details)
	}
	if i := n.reg.Count(servicenettest.RouteInvoke, ""); i != 0 {
		t.Errorf("the registry's invoke was called %d times", i)
	}
	if c := n.reg.Count(servicenettest.RouteCard, "paid"); c != 1 {
		t.Errorf("card read %d times, want 1 (the only way to know the price)", c)
	}

	// A card that does not say the agent is paid, and a registry that asks for
	// payment all the same: still settlement_required, and nothing paid.
	n.reg.Add(servicenettest.Agent{ID: "sly", RequiresPayment: ptr(false), Pricing: json.RawMessage(`{}`),
		Price: &servicenettest.Price{Version: 2}})
	_, err = n.invoke("sly", "")
	n.refused(err, tip, commands.KindInvalid, "settlement_required", "settlement")
	if n.reg.PaidAttempts() != 0 {
		t.Errorf("a payment was sent")
	}
}

func TestServicenetInputSchema(t *testing.T) {
	n := newSNNode(t, snConfig{})
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema",
		"type":"object","required":["city","days"],"additionalProperties":false,
		"properties":{"city":{"type":"string","minLength":2},"days":{"type":"integer","minimum":1,"maximum":14}}}`
	n.reg.Add(servicenettest.Agent{ID: "forecast", InputSchema: json.RawMessage(schema)})
	tip := n.log.Tip().Seq

	_, err := n.invoke("forecast", `{"city":"X","days":0,"units":"metric"}`)
	ce := n.refused(err, tip, commands.KindInvalid, "invalid_input", "input")
	vs, ok := ce.Details["violations"].([]commands.Violation)
	if !ok || len(vs) < 3 {
		t.Fatalf("violations = %#v, want one each for city, days and units", ce.Details["violations"])
	}
	paths := map[string]bool{}
	for _, v := range vs {
		paths[v.Path] = true
		if v.Message == "" {
			t.Errorf("violation without a message: %+v", v)
		}
	}
	if !paths["/city"] || !paths["/days"] || !paths[""] {
		t.Errorf("violations %+v do not name /city, /days and the object", vs)
	}
	// No input at all is checked as {}.
	_, err = n.invoke("forecast", "")
	ce = n.refused(err, tip, commands.KindInvalid, "invalid_input", "input")
	if vs := ce.Details["violations"].([]commands.Violation); len(vs) == 0 {
		t.Errorf("no violations for a missing input")
	}
	if i := n.reg.Count(servicenettest.RouteInvoke, ""); i != 0 {
		t.Errorf("invalid input reached the registry %d times", i)
	}
	if _, err := n.invoke("forecast", `{"city":"Oslo","days":3}`); err != nil {
		t.Fatalf("valid input: %v", err)
	}
}

// TestServicenetSchemaRefsStayInside: a card's schema cannot make the node
// read a file or fetch a URL.
func TestServicenetSchemaRefsStayInside(t *testing.T) {
	var fetched atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type":"object"}`))
	}))
	defer other.Close()
	n := newSNNode(t, snConfig{})
	tip := n.log.Tip().Seq
	for _, ref := range []string{"file:///etc/passwd", other.URL + "/schema.json", "https://example.com/schema.json", "/etc/passwd#/x"} {
		n.reg.Add(servicenettest.Agent{ID: "refs", InputSchema: json.RawMessage(`{"$ref":"` + ref + `"}`)})
		_, err := n.invoke("refs", `{}`)
		ce := n.refused(err, tip, commands.KindUpstream, "registry_bad_response", "")
		if strings.Contains(ce.Message, "root:") {
			t.Errorf("%s: the message shows the file: %s", ref, ce.Message)
		}
	}
	// A $ref inside the schema itself works.
	n.reg.Add(servicenettest.Agent{ID: "inner", InputSchema: json.RawMessage(
		`{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}`)})
	_, err := n.invoke("inner", `{"n":"x"}`)
	n.refused(err, tip, commands.KindInvalid, "invalid_input", "input")
	if fetched.Load() != 0 {
		t.Errorf("the schema's $ref was fetched %d times", fetched.Load())
	}
	if i := n.reg.Count(servicenettest.RouteInvoke, ""); i != 0 {
		t.Errorf("the registry's invoke was called %d times", i)
	}
}

func TestServicenetOAuth(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "mail", SecuritySchemes: json.RawMessage(snSchemes)})
	tip := n.log.Tip().Seq

	res, err := n.invoke("mail", `{"to":"a"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := servicenet.OAuth{AuthorizationURL: "https://auth.example.com/authorize", TokenURL: "https://auth.example.com/token",
		RefreshURL: "https://auth.example.com/refresh", Scopes: []string{"read", "write"}}
	if res.OAuth == nil || !reflect.DeepEqual(*res.OAuth, want) || res.Status != "" {
		t.Fatalf("result = %+v, want consent %+v", res, want)
	}
	if b, _ := json.Marshal(res.Body()); string(b) != `{"authorizationUrl":"https://auth.example.com/authorize",`+
		`"tokenUrl":"https://auth.example.com/token","refreshUrl":"https://auth.example.com/refresh","scopes":["read","write"]}` {
		t.Errorf("consent body = %s", b)
	}
	if i := n.reg.Count(servicenettest.RouteInvoke, ""); i != 0 || n.log.Tip().Seq != tip {
		t.Errorf("consent invoked the registry %d times, appended %v", i, n.types(tip))
	}

	// With the token: it reaches the registry and nothing else.
	const token = "ya29.OAUTH-SECRET-7f3c9e1d"
	res, err = n.invoke("mail", `{"to":"a"}`, func(in *commands.InvokeInput) { in.AuthToken = ptr(token) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" {
		t.Errorf("result = %+v", res)
	}
	inv := n.reg.Invocations("mail")
	if len(inv) != 1 || inv[0].AuthToken != token {
		t.Errorf("the registry got %+v, want the token in the invoke body", inv)
	}
	got := payloadOf[events.ServicenetInvoked](t, n.ofType(tip, events.TypeServicenetInvoked)[0])
	if !got.OAuth {
		t.Errorf("servicenet.invoked does not say a token was forwarded: %+v", got)
	}
	if want := canonicalSHA256(t, `{"input":{"to":"a"},"message":"hello"}`); got.RequestSHA256 != want {
		t.Errorf("request_sha256 covers more than message and input")
	}
	// An async call with the token, polled to its end, and a registry that
	// echoes the token in a refusal.
	n.reg.Update("mail", func(a *servicenettest.Agent) { a.Async = &servicenettest.Async{RunningPolls: 1} })
	res, err = n.invoke("mail", "", func(in *commands.InvokeInput) { in.AuthToken = ptr(token) })
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := n.sn.Receipt(context.Background(), owner, res.ReceiptID); err != nil {
			t.Fatal(err)
		}
	}
	n.reg.Update("mail", func(a *servicenettest.Agent) {
		a.InvokeFault = &servicenettest.Fault{Status: 400, Body: []byte(`{"error":"token ` + token + ` has expired"}`)}
	})
	tip = n.log.Tip().Seq
	_, err = n.invoke("mail", "", func(in *commands.InvokeInput) { in.AuthToken = ptr(token) })
	ce := n.refused(err, tip, commands.KindInvalid, "registry_rejected", "")
	if strings.Contains(ce.Message, token) || strings.Contains(err.Error(), token) {
		t.Errorf("the refusal relays the token: %s", ce.Message)
	}
	if !strings.Contains(ce.Message, "has expired") {
		t.Errorf("the refusal lost the registry's reason: %s", ce.Message)
	}
	n.reg.Update("mail", func(a *servicenettest.Agent) {
		a.InvokeFault = &servicenettest.Fault{Status: 500, Body: []byte(`{"error":"` + token + `"}`)}
	})
	_, err = n.invoke("mail", "", func(in *commands.InvokeInput) { in.AuthToken = ptr(token) })
	n.refused(err, tip, commands.KindUpstream, "registry_unavailable", "")
	if strings.Contains(err.Error(), token) {
		t.Errorf("the 5xx error relays the token: %v", err)
	}
	if n.logs.String() == "" {
		t.Fatal("the node logged nothing at Debug: the log check below would prove nothing")
	}
	n.noSecret(token)
}

func TestServicenetRegistryFailures(t *testing.T) {
	const retries = 2
	for _, c := range []struct {
		name        string
		agent       servicenettest.Agent
		call        string // "invoke", "card", "task" or "list"
		kind        commands.Kind
		code, field string
		route       servicenettest.Route
		requests    int // requests to route
	}{
		{"unknown agent", servicenettest.Agent{ID: "other"}, "invoke", commands.KindNotFound, "agent_not_found", "agent_id", servicenettest.RouteCard, 1},
		{"unknown agent card", servicenettest.Agent{ID: "other"}, "card", commands.KindNotFound, "agent_not_found", "agent_id", servicenettest.RouteCard, 1},
		{"invoke 400", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 400, Body: []byte(`{"error":"message too long"}`)}},
			"invoke", commands.KindInvalid, "registry_rejected", "", servicenettest.RouteInvoke, 1},
		{"invoke 422", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 422}},
			"invoke", commands.KindInvalid, "registry_rejected", "", servicenettest.RouteInvoke, 1},
		{"invoke 404", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 404}},
			"invoke", commands.KindNotFound, "agent_not_found", "agent_id", servicenettest.RouteInvoke, 1},
		{"invoke 500 not retried", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 500}},
			"invoke", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteInvoke, 1},
		{"invoke 503 not retried", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 503}},
			"invoke", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteInvoke, 1},
		{"invoke 401", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 401}},
			"invoke", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteInvoke, 1},
		{"card 503 retried", servicenettest.Agent{ID: "a", CardFault: &servicenettest.Fault{Status: 503}},
			"invoke", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteCard, 1 + retries},
		{"card 500 retried", servicenettest.Agent{ID: "a", CardFault: &servicenettest.Fault{Status: 500}},
			"card", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteCard, 1 + retries},
		{"task 503 retried", servicenettest.Agent{ID: "a", TaskFault: &servicenettest.Fault{Status: 503}},
			"task", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteTask, 1 + retries},
		{"task 404", servicenettest.Agent{ID: "a", TaskFault: &servicenettest.Fault{Status: 404}},
			"task", commands.KindNotFound, "task_not_found", "task_id", servicenettest.RouteTask, 1},
		{"list 502", servicenettest.Agent{ID: "a"}, "list", commands.KindUpstream, "registry_unavailable", "", servicenettest.RouteList, 1 + retries},
		{"invoke hangs", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Delay: time.Minute}},
			"invoke", commands.KindUpstreamTimeout, "registry_timeout", "", servicenettest.RouteInvoke, 1},
		{"card hangs", servicenettest.Agent{ID: "a", CardFault: &servicenettest.Fault{Delay: time.Minute}},
			"card", commands.KindUpstreamTimeout, "registry_timeout", "", servicenettest.RouteCard, 1 + retries},
		{"task hangs", servicenettest.Agent{ID: "a", TaskFault: &servicenettest.Fault{Delay: time.Minute}},
			"task", commands.KindUpstreamTimeout, "registry_timeout", "", servicenettest.RouteTask, 1 + retries},
		{"redirect", servicenettest.Agent{ID: "a", InvokeFault: &servicenettest.Fault{Status: 307,
			Header: http.Header{"Location": {"http://127.0.0.1:1/steal"}}}},
			"invoke", commands.KindUpstream, "registry_bad_response", "", servicenettest.RouteInvoke, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newSNNode(t, snConfig{readTimeout: 100 * time.Millisecond, retries: retries})
			if c.call == "task" {
				// Only a task this node invoked is asked of the registry.
				c.agent.Async = &servicenettest.Async{TaskID: "t1"}
			}
			n.reg.Add(c.agent)
			if c.call == "task" {
				if _, err := n.invoke("a", ""); err != nil {
					t.Fatal(err)
				}
			}
			if c.name == "list 502" {
				n.reg.SetListFault(&servicenettest.Fault{Status: 502})
			}
			tip := n.log.Tip().Seq
			start := time.Now()
			var err error
			switch c.call {
			case "invoke":
				_, err = n.invoke("a", "")
			case "card":
				_, err = n.sn.Card(context.Background(), owner, "a")
			case "task":
				_, err = n.sn.Task(context.Background(), owner, "a", "t1")
			case "list":
				_, err = n.sn.Agents(context.Background(), owner)
			}
			n.refused(err, tip, c.kind, c.code, c.field)
			if got := n.reg.Count(c.route, ""); got != c.requests {
				t.Errorf("%d requests to %s, want %d", got, c.route, c.requests)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}

	// A read that fails once and then answers is retried to success.
	n := newSNNode(t, snConfig{retries: retries})
	n.reg.Add(servicenettest.Agent{ID: "a", CardFault: &servicenettest.Fault{Status: 503, Times: 1}})
	if _, err := n.invoke("a", ""); err != nil {
		t.Fatal(err)
	}
	if c := n.reg.Count(servicenettest.RouteCard, "a"); c != 2 {
		t.Errorf("card requests = %d, want 2", c)
	}
	// A registry that is not there at all.
	n.reg.Close()
	tip := n.log.Tip().Seq
	_, err := n.invoke("a", "")
	n.refused(err, tip, commands.KindUpstream, "registry_unavailable", "")
}

// TestServicenetMalformedAnswers: an answer outside the registry's contract is
// 502 registry_bad_response, and nothing is recorded of it.
func TestServicenetMalformedAnswers(t *testing.T) {
	for _, c := range []struct {
		name  string
		route servicenettest.Route
		body  string
	}{
		{"card not JSON", servicenettest.RouteCard, `<html>oops</html>`},
		{"card an array", servicenettest.RouteCard, `[]`},
		{"card of another agent", servicenettest.RouteCard, `{"agent_id":"b","name":"b"}`},
		{"card name a number", servicenettest.RouteCard, `{"agent_id":"a","name":5}`},
		{"card schema a string", servicenettest.RouteCard, `{"agent_id":"a","name":"a","input_schema":"object"}`},
		{"card schema not a schema", servicenettest.RouteCard, `{"agent_id":"a","name":"a","input_schema":{"type":12}}`},
		{"card requires_payment a string", servicenettest.RouteCard, `{"agent_id":"a","name":"a","requires_payment":"yes"}`},
		{"card OAuth without flows", servicenettest.RouteCard, `{"agent_id":"a","name":"a","security_schemes":{"x":{"type":"apiKey"}}}`},
		{"invoke not JSON", servicenettest.RouteInvoke, `not json`},
		{"invoke empty", servicenettest.RouteInvoke, ``},
		{"invoke no status", servicenettest.RouteInvoke, `{"result":{}}`},
		{"invoke status a number", servicenettest.RouteInvoke, `{"status":1}`},
		{"invoke unknown status", servicenettest.RouteInvoke, `{"status":"queued","receipt_id":"r","task_id":"t"}`},
		{"completed without result", servicenettest.RouteInvoke, `{"status":"completed"}`},
		{"completed with a string result", servicenettest.RouteInvoke, `{"status":"completed","result":"42"}`},
		{"accepted without task_id", servicenettest.RouteInvoke, `{"status":"accepted","receipt_id":"r1"}`},
		{"accepted without receipt_id", servicenettest.RouteInvoke, `{"status":"accepted","task_id":"t1"}`},
		{"accepted with a path in task_id", servicenettest.RouteInvoke, `{"status":"accepted","receipt_id":"r1","task_id":"../admin"}`},
		{"accepted with a numeric task_id", servicenettest.RouteInvoke, `{"status":"accepted","receipt_id":"r1","task_id":7}`},
		{"task not JSON", servicenettest.RouteTask, `{`},
		{"task of another id", servicenettest.RouteTask, `{"task_id":"t2","status":"completed","result":{}}`},
		{"task unknown status", servicenettest.RouteTask, `{"task_id":"t1","status":"done"}`},
		{"task completed without result", servicenettest.RouteTask, `{"task_id":"t1","status":"completed"}`},
		{"task error not a string", servicenettest.RouteTask, `{"task_id":"t1","status":"failed","error":{"m":1}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newSNNode(t, snConfig{})
			f := &servicenettest.Fault{Status: 200, Body: []byte(c.body)}
			a := servicenettest.Agent{ID: "a", Async: &servicenettest.Async{TaskID: "t1"}}
			switch c.route {
			case servicenettest.RouteCard:
				a.CardFault = f
			case servicenettest.RouteInvoke:
				a.InvokeFault = f
			case servicenettest.RouteTask:
				a.TaskFault = f
			}
			n.reg.Add(a)
			var tip uint64
			var err error
			if c.route == servicenettest.RouteTask {
				// A task this node invoked, so that an end would be recorded.
				if _, err := n.invoke("a", ""); err != nil {
					t.Fatal(err)
				}
				tip = n.log.Tip().Seq
				_, err = n.sn.Task(context.Background(), owner, "a", "t1")
			} else {
				tip = n.log.Tip().Seq
				_, err = n.invoke("a", "")
			}
			n.refused(err, tip, commands.KindUpstream, "registry_bad_response", "")
		})
	}

	// A receipt the registry already gave for an earlier call is refused.
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "a", Async: &servicenettest.Async{ReceiptID: "rcpt-same"}})
	if _, err := n.invoke("a", ""); err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip().Seq
	_, err := n.invoke("a", "")
	n.refused(err, tip, commands.KindUpstream, "registry_bad_response", "")

	// Paid, the call is refused the same, but the payment that settled is
	// recorded: the money moved.
	n.account("main", "", "")
	n.reg.Add(servicenettest.Agent{ID: "p", Async: &servicenettest.Async{ReceiptID: "rcpt-paid"}, Price: &servicenettest.Price{Version: 2}})
	if _, err := n.invoke("p", "", paidInvoke("main", "base-sepolia")); err != nil {
		t.Fatal(err)
	}
	tip = n.log.Tip().Seq
	_, err = n.invoke("p", "", paidInvoke("main", "base-sepolia"))
	var ce *commands.Error
	if !errors.As(err, &ce) || ce.Code != "registry_bad_response" || !strings.Contains(ce.Message, "payment.settled") {
		t.Fatalf("err = %v, want registry_bad_response saying the payment is recorded", err)
	}
	if got := strings.Join(n.types(tip), " "); got != "payment.authorized payment.settled" {
		t.Errorf("a paid call with a reused receipt appended %q, want the payment authorized and settled", got)
	}
	if len(n.reg.Settlements()) != 2 {
		t.Errorf("settlements = %d", len(n.reg.Settlements()))
	}
	if diff, err := n.log.RebuildModels(context.Background(), nil); err != nil || !diff.Same() {
		t.Errorf("the live models differ from a rebuild: %+v %v", diff, err)
	}
}

// TestServicenetPathInjection: ids outside the registry id alphabet are refused
// before any request leaves the node.
func TestServicenetPathInjection(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "a"})
	tip := n.log.Tip().Seq
	bad := []string{"../x", "a/b", "%2e%2e", "a?b", "a#b", "..", ".", "", "a b", "a%2Fb", "é", strings.Repeat("a", 129), "a\x00", "/v1"}
	for _, id := range bad {
		_, err := n.invoke(id, "")
		n.refused(err, tip, commands.KindInvalid, "invalid_field", "agent_id")
		_, err = n.sn.Card(context.Background(), owner, id)
		n.refused(err, tip, commands.KindInvalid, "invalid_field", "agent_id")
		_, err = n.sn.Task(context.Background(), owner, id, "t1")
		n.refused(err, tip, commands.KindInvalid, "invalid_field", "agent_id")
		_, err = n.sn.Task(context.Background(), owner, "a", id)
		n.refused(err, tip, commands.KindInvalid, "invalid_field", "task_id")
	}
	if q := n.reg.Requests(); len(q) != 0 {
		t.Errorf("%d requests reached the registry, first %s %s", len(q), q[0].Method, q[0].Path)
	}
	// The longest valid id, with every allowed character, is sent path-escaped
	// as one segment.
	id := strings.Repeat("A", 120) + "z9._:-.."
	n.reg.Add(servicenettest.Agent{ID: id})
	if _, err := n.invoke(id, ""); err != nil {
		t.Fatal(err)
	}
	if c := n.reg.Count(servicenettest.RouteInvoke, id); c != 1 {
		t.Errorf("invoke of %s reached the registry %d times", id, c)
	}
}
