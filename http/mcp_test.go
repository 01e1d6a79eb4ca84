package http

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civnode/civnode/commands"
)

// allMCPTools are the tools of a node with missions, identities and a registry.
var allMCPTools = []string{
	"claim_mission", "complete_mission", "get_identity", "get_mission", "get_servicenet_receipt",
	"invoke_servicenet_agent_async", "invoke_servicenet_agent_sync", "list_missions", "publish_mission",
	"query_events", "settle_mission",
}

func TestMCPUnauthenticated(t *testing.T) {
	n := newTestNode(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, token := range []string{"", "not-the-token"} {
		r := n.request(http.MethodPost, "/mcp", token, strings.NewReader(initialize),
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		r.wantError(t, http.StatusUnauthorized, codeUnauthorized, "")
		if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="civnode"` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
	}
	if _, err := n.mcpConnect(t, "", ""); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("the SDK client connected without a token (err %v)", err)
	}
	if _, err := n.mcpConnect(t, testToken, ""); err != nil {
		t.Errorf("the SDK client could not connect with the owner token: %v", err)
	}
}

func TestMCPToolList(t *testing.T) {
	w := newMCPWorld(t)
	for _, version := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		cs, err := w.mcpConnect(t, testToken, version)
		if err != nil {
			t.Fatalf("protocol %q: %v", version, err)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("protocol %q: list tools: %v", version, err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			schema, _ := tool.InputSchema.(map[string]any)
			if schema["type"] != "object" || schema["properties"] == nil {
				t.Errorf("%s: input schema %v is not an object with properties", tool.Name, tool.InputSchema)
			}
			if tool.Description == "" {
				t.Errorf("%s has no description", tool.Name)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, allMCPTools) {
			t.Errorf("protocol %q: tools %v, want %v", version, names, allMCPTools)
		}
	}

	// Without a registry there are no servicenet tools; without the read
	// models, only query_events.
	bare := newTestNode(t)
	cs := bare.mcpSession(t, testToken)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "query_events" {
		t.Errorf("a node with only a log lists %v, want query_events alone", res.Tools)
	}
}

// TestMCPArgumentsMatchBodies: a tool that stands for a route with a body
// takes exactly the body's members, plus what the route takes from its path.
func TestMCPArgumentsMatchBodies(t *testing.T) {
	for _, c := range []struct {
		args any
		body any
		path []string
	}{
		{publishMissionArgs{}, commands.CreateMissionInput{}, nil},
		{claimMissionArgs{}, commands.ClaimMissionInput{}, []string{"mission_id"}},
		{completeMissionArgs{}, commands.CompleteMissionInput{}, []string{"mission_id"}},
		{missionIDArgs{}, commands.SettleMissionInput{}, []string{"mission_id"}},
		{invokeArgs{}, commands.InvokeInput{}, []string{"agent_id"}},
		{invokeSyncArgs{}, commands.InvokeInput{}, []string{"agent_id", "wait"}},
	} {
		schema, err := jsonschema.ForType(reflect.TypeOf(c.args), schemaOptions)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(func(yield func(string) bool) {
			for name := range schema.Properties {
				if !yield(name) {
					return
				}
			}
		})
		want := append(jsonNames(reflect.TypeOf(c.body)), c.path...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%T takes %v, want %v (%T and the path)", c.args, got, want, c.body)
		}
	}
}

// jsonNames are the JSON member names of a struct type's fields.
func jsonNames(t reflect.Type) []string {
	names := []string{}
	for _, f := range reflect.VisibleFields(t) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// TestMCPMissionToolsMatchHTTP runs a mission's lifecycle through the tools
// and checks every answer against the matching route's for the same state.
func TestMCPMissionToolsMatchHTTP(t *testing.T) {
	w := newMCPWorld(t)
	pub, ada := w.mcpSession(t, w.tokens["pub"]), w.mcpSession(t, w.tokens["ada"])
	owner := w.mcpSession(t, testToken)
	w.create(w.tokens["pub"], map[string]any{"domain": "logistics"})

	res := callTool(t, pub, "publish_mission", missionBody(map[string]any{"payload": map[string]any{"note": "<&>"}}))
	var rec missionRec
	if err := json.Unmarshal(toolText(t, res), &rec); err != nil || rec.State != "created" {
		t.Fatalf("publish_mission answered %s (%v)", toolText(t, res), err)
	}
	get := func() response { return w.get("/v1/core/missions/" + rec.MissionID) }
	sameAsHTTP(t, res, get())
	sameAsHTTP(t, callTool(t, owner, "get_mission", map[string]any{"mission_id": rec.MissionID}), get())

	for _, q := range []struct {
		args  map[string]any
		query string
	}{
		{nil, ""},
		{map[string]any{"state": "created", "domain": "security"}, "?state=created&domain=security"},
		{map[string]any{"limit": 1}, "?limit=1"},
		{map[string]any{"publisher": "pub", "subnet_id": "genesis", "required_role": "enforcer"},
			"?publisher=pub&subnet_id=genesis&required_role=enforcer"},
	} {
		sameAsHTTP(t, callTool(t, ada, "list_missions", q.args), w.civSend(http.MethodGet, "/v1/core/missions"+q.query, w.tokens["ada"], nil))
	}
	// The cursor of a page leads to the same next page.
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	if err := json.Unmarshal(toolText(t, callTool(t, ada, "list_missions", map[string]any{"limit": 1})), &page); err != nil || page.NextCursor == nil {
		t.Fatalf("no next_cursor after a page of 1 of 2 (%v)", err)
	}
	sameAsHTTP(t, callTool(t, ada, "list_missions", map[string]any{"limit": 1, "cursor": *page.NextCursor}),
		w.civSend(http.MethodGet, "/v1/core/missions?limit=1&cursor="+url.QueryEscape(*page.NextCursor), w.tokens["ada"], nil))

	sessions := map[string]*mcp.ClientSession{"ada": ada, "pub": pub}
	for _, step := range []struct {
		who, tool string
		args      map[string]any
		state     string
	}{
		{"ada", "claim_mission", map[string]any{"claimer": "ada"}, "claimed"},
		{"ada", "complete_mission", map[string]any{"result": "done"}, "completed"},
		{"pub", "settle_mission", nil, "settled"},
	} {
		args := map[string]any{"mission_id": rec.MissionID}
		for k, v := range step.args {
			args[k] = v
		}
		res := callTool(t, sessions[step.who], step.tool, args)
		sameAsHTTP(t, res, get())
		if err := json.Unmarshal(toolText(t, res), &rec); err != nil || rec.State != step.state {
			t.Fatalf("%s answered %s, want state %s", step.tool, toolText(t, res), step.state)
		}
		// The same step again is the route's refusal, byte for byte.
		path := "/v1/core/missions/" + rec.MissionID + "/" + strings.TrimSuffix(step.tool, "_mission")
		body := step.args
		if body == nil {
			body = map[string]any{}
		}
		tip := w.log.Tip().Seq
		sameAsHTTP(t, callTool(t, sessions[step.who], step.tool, args), w.civSend(http.MethodPost, path, w.tokens[step.who], body))
		if got := w.log.Tip().Seq; got != tip {
			t.Errorf("a refused %s moved the tip from %d to %d", step.tool, tip, got)
		}
	}
	sameAsHTTP(t, callTool(t, owner, "get_mission", map[string]any{"mission_id": "0190f1e2-0000-7000-8000-000000000000"}),
		w.get("/v1/core/missions/0190f1e2-0000-7000-8000-000000000000"))
}

// routeOf is the HTTP request each tool stands for, on the mission id.
func routeOf(tool, missionID string) (method, path string, body any) {
	m := "/v1/core/missions/" + missionID
	switch tool {
	case "list_missions":
		return http.MethodGet, "/v1/core/missions", nil
	case "get_mission":
		return http.MethodGet, m, nil
	case "publish_mission":
		return http.MethodPost, "/v1/core/missions", missionBody(nil)
	case "claim_mission":
		return http.MethodPost, m + "/claim", map[string]any{"claimer": "ada"}
	case "complete_mission":
		return http.MethodPost, m + "/complete", map[string]any{"result": "done"}
	case "settle_mission":
		return http.MethodPost, m + "/settle", map[string]any{}
	case "get_identity":
		return http.MethodGet, "/v1/civilization/public-identity?public_id=ada", nil
	case "query_events":
		return http.MethodGet, "/v1/events", nil
	case "invoke_servicenet_agent_sync", "invoke_servicenet_agent_async":
		return http.MethodPost, "/v1/core/servicenet/agents/echo/invoke", map[string]any{"message": "hi"}
	case "get_servicenet_receipt":
		return http.MethodPost, "/v1/core/servicenet/agents/slow/tasks/slow-task-1/get", map[string]any{}
	}
	panic("no route for " + tool)
}

// toolArgs are arguments of each tool that match routeOf's request.
func toolArgs(tool, missionID string) map[string]any {
	switch tool {
	case "publish_mission":
		return missionBody(nil)
	case "get_mission", "settle_mission":
		return map[string]any{"mission_id": missionID}
	case "claim_mission":
		return map[string]any{"mission_id": missionID, "claimer": "ada"}
	case "complete_mission":
		return map[string]any{"mission_id": missionID, "result": "done"}
	case "get_identity":
		return map[string]any{"public_id": "ada"}
	case "invoke_servicenet_agent_sync", "invoke_servicenet_agent_async":
		return map[string]any{"agent_id": "echo", "message": "hi"}
	case "get_servicenet_receipt":
		return map[string]any{"receipt_id": "rcpt-1"}
	}
	return nil
}

// TestMCPScopes: token kinds are admitted to each tool exactly as to its
// route. An observer gets each route's 403 from each tool but query_events,
// which it reads as GET /v1/events answers it; an agent token that publishes
// for another identity gets the command's 403.
func TestMCPScopes(t *testing.T) {
	w := newMCPWorld(t)
	observer := w.observerToken()
	obs := w.mcpSession(t, observer)
	rec := w.create(w.tokens["pub"], nil)
	for _, tool := range allMCPTools {
		method, path, body := routeOf(tool, rec.MissionID)
		tip := w.log.Tip().Seq
		res := callTool(t, obs, tool, toolArgs(tool, rec.MissionID))
		r := w.civSend(method, path, observer, body)
		sameAsHTTP(t, res, r)
		if tool == "query_events" {
			if r.status != http.StatusOK {
				t.Errorf("an observer may not read GET /v1/events: %d %s", r.status, r.body)
			}
		} else {
			r.wantError(t, http.StatusForbidden, "forbidden", "")
		}
		if got := w.log.Tip().Seq; got != tip {
			t.Errorf("an observer's %s moved the tip from %d to %d", tool, tip, got)
		}
	}

	ada := w.mcpSession(t, w.tokens["ada"])
	res := callTool(t, ada, "publish_mission", missionBody(nil)) // publisher pub
	r := w.civSend(http.MethodPost, "/v1/core/missions", w.tokens["ada"], missionBody(nil))
	r.wantError(t, http.StatusForbidden, "forbidden", "publisher")
	sameAsHTTP(t, res, r)
	// ada may not settle what pub published, nor claim as bob.
	res = callTool(t, ada, "claim_mission", map[string]any{"mission_id": rec.MissionID, "claimer": "bob"})
	sameAsHTTP(t, res, w.step(rec.MissionID, "claim", w.tokens["ada"], map[string]any{"claimer": "bob"}))
	if !res.IsError {
		t.Error("ada claimed as bob")
	}
}

// TestMCPValidationMatchesHTTP: a bad argument is the route's 400, with the
// same code, field and message.
func TestMCPValidationMatchesHTTP(t *testing.T) {
	w := newMCPWorld(t)
	cs := w.mcpSession(t, testToken)
	pub := w.mcpSession(t, w.tokens["pub"])
	for _, c := range []struct {
		tool  string
		args  map[string]any
		query string
	}{
		{"list_missions", map[string]any{"limit": 0}, "/v1/core/missions?limit=0"},
		{"list_missions", map[string]any{"limit": 1001}, "/v1/core/missions?limit=1001"},
		{"list_missions", map[string]any{"state": "open"}, "/v1/core/missions?state=open"},
		{"list_missions", map[string]any{"required_role": "pilot"}, "/v1/core/missions?required_role=pilot"},
		{"list_missions", map[string]any{"subnet_id": "Not A Slug"}, "/v1/core/missions?subnet_id=Not+A+Slug"},
		{"list_missions", map[string]any{"cursor": "bogus"}, "/v1/core/missions?cursor=bogus"},
		{"query_events", map[string]any{"since": "yesterday"}, "/v1/events?since=yesterday"},
		{"query_events", map[string]any{"type": "Mission!"}, "/v1/events?type=Mission!"},
		{"query_events", map[string]any{"limit": -1}, "/v1/events?limit=-1"},
		{"query_events", map[string]any{"type": "mission.*", "limit": 2}, "/v1/events?type=mission.*&limit=2"},
		{"get_identity", nil, "/v1/civilization/public-identity"},
		{"get_identity", map[string]any{"public_id": "ada", "agent_did": w.dids["ada"]},
			"/v1/civilization/public-identity?public_id=ada&agent_did=" + url.QueryEscape(w.dids["ada"])},
		{"get_identity", map[string]any{"public_id": "nobody"}, "/v1/civilization/public-identity?public_id=nobody"},
		{"get_identity", map[string]any{"agent_did": w.dids["ada"]}, "/v1/civilization/public-identity?agent_did=" + url.QueryEscape(w.dids["ada"])},
	} {
		r := w.get(c.query)
		sameAsHTTP(t, callTool(t, cs, c.tool, c.args), r)
	}

	// Bodies: the tool's arguments decode as the route's body does.
	for _, edits := range []map[string]any{
		{"agent_credits": 5},
		{"title": ""},
		{"title": strings.Repeat("t", 201)},
		{"reward": map[string]any{"agent_credit": "25", "reputation": 3, "capacity": 1, "treasury_share_credit": 5}},
		{"reward": map[string]any{"agent_credit": -1, "reputation": 3, "capacity": 1, "treasury_share_credit": 5}},
		{"reward": nil},
		{"publisher_kind": "guild"},
		{"payload": []int{1}},
		{"required_role": 7},
	} {
		tip := w.log.Tip().Seq
		res := callTool(t, pub, "publish_mission", missionBody(edits))
		sameAsHTTP(t, res, w.civSend(http.MethodPost, "/v1/core/missions", w.tokens["pub"], missionBody(edits)))
		if !res.IsError || w.log.Tip().Seq != tip {
			t.Errorf("publish_mission with %v: isError %v, tip %d → %d", edits, res.IsError, tip, w.log.Tip().Seq)
		}
	}
	rec := w.create(w.tokens["pub"], nil)
	for _, c := range []struct {
		tool, step string
		body       map[string]any
	}{
		{"claim_mission", "claim", map[string]any{"claimer": "ada", "role": "enforcer"}},
		{"claim_mission", "claim", map[string]any{"claimer": 5}},
		{"claim_mission", "claim", map[string]any{}},
		{"complete_mission", "complete", map[string]any{"result": "done"}},
		{"complete_mission", "complete", map[string]any{"result": ""}},
		{"settle_mission", "settle", map[string]any{"now": true}},
	} {
		args := map[string]any{"mission_id": rec.MissionID}
		for k, v := range c.body {
			args[k] = v
		}
		sameAsHTTP(t, callTool(t, cs, c.tool, args), w.step(rec.MissionID, c.step, testToken, c.body))
	}
	// What the route takes from its path is a required argument here.
	for _, tool := range []string{"get_mission", "claim_mission", "complete_mission", "settle_mission"} {
		wantToolError(t, callTool(t, cs, tool, nil), "missing_field", "mission_id")
	}
	wantToolError(t, callTool(t, cs, "get_servicenet_receipt", nil), "missing_field", "receipt_id")
	wantToolError(t, callTool(t, cs, "list_missions", map[string]any{"limit": "10"}), "invalid_field", "limit")
	wantToolError(t, callTool(t, cs, "list_missions", map[string]any{"sort": "newest"}), "unknown_field", "sort")
}

// wantToolError checks an error result's code and field.
func wantToolError(t *testing.T, res *mcp.CallToolResult, code, field string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result is not an error: %s", toolText(t, res))
	}
	var body map[string]any
	if err := json.Unmarshal(toolText(t, res), &body); err != nil {
		t.Fatal(err)
	}
	if body["code"] != code || (field != "" && body["field"] != field) || (field == "" && body["field"] != nil) {
		t.Errorf("error %v, want code %s field %q", body, code, field)
	}
}

// TestMCPServicenet: the invoke tools answer what the invoke route answers,
// the sync one waits for an accepted task, and a receipt leads to its task.
func TestMCPServicenet(t *testing.T) {
	w := newMCPWorld(t)
	owner := w.mcpSession(t, testToken)
	ada := w.mcpSession(t, w.tokens["ada"])
	pub := w.mcpSession(t, w.tokens["pub"])

	for _, tool := range []string{"invoke_servicenet_agent_async", "invoke_servicenet_agent_sync"} {
		res := callTool(t, ada, tool, map[string]any{"agent_id": "echo", "message": "<hello & bye>", "input": map[string]any{"text": "x"}})
		sameAsHTTP(t, res, w.civSend(http.MethodPost, "/v1/core/servicenet/agents/echo/invoke", w.tokens["ada"],
			map[string]any{"message": "<hello & bye>", "input": map[string]any{"text": "x"}}))
		// The route's refusals, byte for byte.
		for _, c := range []struct {
			agent string
			body  map[string]any
		}{
			{"echo", map[string]any{}},
			{"echo", map[string]any{"message": "hi", "input": map[string]any{"text": 5}}},
			{"echo", map[string]any{"message": "hi", "settlement": map[string]any{"layer": "web3"}}},
			{"echo", map[string]any{"message": "hi", "extra": true}},
			{"ghost", map[string]any{"message": "hi"}},
			{"bad id!", map[string]any{"message": "hi"}},
		} {
			args := map[string]any{"agent_id": c.agent}
			for k, v := range c.body {
				args[k] = v
			}
			sameAsHTTP(t, callTool(t, ada, tool, args),
				w.civSend(http.MethodPost, "/v1/core/servicenet/agents/"+url.PathEscape(c.agent)+"/invoke", w.tokens["ada"], c.body))
		}
	}

	// async, then the receipt: running, then completed.
	res := callTool(t, ada, "invoke_servicenet_agent_async", map[string]any{"agent_id": "slow", "message": "think"})
	var accepted struct {
		Status    string `json:"status"`
		ReceiptID string `json:"receipt_id"`
		TaskID    string `json:"task_id"`
	}
	if err := json.Unmarshal(toolText(t, res), &accepted); err != nil || accepted.Status != "accepted" || accepted.ReceiptID == "" {
		t.Fatalf("async invoke of slow answered %s", toolText(t, res))
	}
	if keys := jsonKeys(t, toolText(t, res)); !slices.Equal(keys, []string{"status", "receipt_id", "task_id"}) {
		t.Errorf("accepted answer has keys %v", keys)
	}
	for _, status := range []string{"running", "completed", "completed"} {
		res := callTool(t, ada, "get_servicenet_receipt", map[string]any{"receipt_id": accepted.ReceiptID})
		var task map[string]any
		if err := json.Unmarshal(toolText(t, res), &task); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"receipt_id": accepted.ReceiptID, "agent_id": "slow", "task_id": accepted.TaskID, "status": status}
		if status == "completed" {
			want["result"] = map[string]any{"answer": float64(42)}
		}
		if !reflect.DeepEqual(task, want) {
			t.Errorf("receipt answered %v, want %v", task, want)
		}
	}
	// The task's end is recorded once, however often it is fetched.
	if n := countEvents(t, w, "servicenet.task.completed"); n != 1 {
		t.Errorf("%d servicenet.task.completed events, want 1", n)
	}
	// The receipt's answer is the get-task route's with the receipt and agent
	// ahead; only the invoker's token and the owner see it.
	var task, routeTask map[string]any
	if err := json.Unmarshal(toolText(t, callTool(t, owner, "get_servicenet_receipt", map[string]any{"receipt_id": accepted.ReceiptID})), &task); err != nil {
		t.Fatal(err)
	}
	w.civSend(http.MethodPost, "/v1/core/servicenet/agents/slow/tasks/"+accepted.TaskID+"/get", testToken, map[string]any{}).wantOK(t, &routeTask)
	routeTask["receipt_id"], routeTask["agent_id"] = accepted.ReceiptID, "slow"
	if !reflect.DeepEqual(task, routeTask) {
		t.Errorf("the owner's receipt answered %v, want the task route's %v", task, routeTask)
	}
	wantToolError(t, callTool(t, pub, "get_servicenet_receipt", map[string]any{"receipt_id": accepted.ReceiptID}), "receipt_not_found", "receipt_id")
	wantToolError(t, callTool(t, owner, "get_servicenet_receipt", map[string]any{"receipt_id": "rcpt-none"}), "receipt_not_found", "receipt_id")

	// sync: accepted, running, completed, in one call.
	res = callTool(t, ada, "invoke_servicenet_agent_sync", map[string]any{"agent_id": "slow", "message": "think"})
	var done map[string]any
	if err := json.Unmarshal(toolText(t, res), &done); err != nil {
		t.Fatal(err)
	}
	if done["status"] != "completed" || done["agent_id"] != "slow" || done["receipt_id"] == nil ||
		!reflect.DeepEqual(done["result"], map[string]any{"answer": float64(42)}) {
		t.Errorf("sync invoke of slow answered %v", done)
	}
	if keys := jsonKeys(t, toolText(t, res)); !slices.Equal(keys, []string{"receipt_id", "agent_id", "task_id", "status", "result"}) {
		t.Errorf("sync answer has keys %v", keys)
	}

	// A task that does not end within wait is answered as it stands.
	start := time.Now()
	res = callTool(t, ada, "invoke_servicenet_agent_sync", map[string]any{"agent_id": "stuck", "message": "think", "wait": 1})
	if err := json.Unmarshal(toolText(t, res), &done); err != nil || done["status"] != "running" || done["receipt_id"] == nil {
		t.Errorf("sync invoke of stuck answered %s", toolText(t, res))
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("sync invoke of stuck answered after %v, before its wait of 1s", d)
	}
	for _, wait := range []any{0, 121, 1.5, "30"} {
		wantToolError(t, callTool(t, ada, "invoke_servicenet_agent_sync", map[string]any{"agent_id": "stuck", "message": "x", "wait": wait}),
			"invalid_field", "wait")
	}
}

// countEvents counts the events of one type.
func countEvents(t *testing.T, w *mcpWorld, typ string) int {
	t.Helper()
	var page struct {
		Total int `json:"total"`
	}
	w.get("/v1/events?type="+typ).wantOK(t, &page)
	return page.Total
}

// TestMCPBounded: a tool call runs under its route's time-out; a list waits
// for a list slot no longer than its route does.
func TestMCPBounded(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.HandlerTimeout = 50 * time.Millisecond }, nil)
	cs := n.mcpSession(t, testToken)
	for range cap(n.srv.listSlots) {
		n.srv.listSlots <- struct{}{}
	}
	r := n.get("/v1/events")
	r.wantError(t, http.StatusServiceUnavailable, codeTimeout, "")
	sameAsHTTP(t, callTool(t, cs, "query_events", nil), r)
	for range cap(n.srv.listSlots) {
		<-n.srv.listSlots
	}
	n.appendEvents("test.one", "test.two")
	sameAsHTTP(t, callTool(t, cs, "query_events", map[string]any{"since": "2000-01-01T00:00:00Z", "type": "test.*"}),
		n.get("/v1/events?since=2000-01-01T00:00:00Z&type=test.*"))
}

// TestMCPPageTruncated: a page the byte budget cut says so in _meta, as the
// route says so in a header.
func TestMCPPageTruncated(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.PageBytes = 600 }, nil)
	n.appendEvents("test.one", "test.two", "test.three", "test.four")
	r := n.get("/v1/events")
	if r.header.Get(PageTruncatedHeader) != "true" {
		t.Fatalf("the page was not cut: %s", r.body)
	}
	res := callTool(t, n.mcpSession(t, testToken), "query_events", nil)
	sameAsHTTP(t, res, r)
	if res.Meta["page_truncated"] != true {
		t.Errorf("_meta = %v, want page_truncated", res.Meta)
	}
	res = callTool(t, n.mcpSession(t, testToken), "query_events", map[string]any{"limit": 1})
	if _, ok := res.Meta["page_truncated"]; ok {
		t.Errorf("a page of one event has _meta %v", res.Meta)
	}
}

// mcpPost posts a raw JSON-RPC body to /mcp as an MCP client would.
func (n *testNode) mcpPost(body string, headers ...string) response {
	n.t.Helper()
	h := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)
	return n.request(http.MethodPost, "/mcp", testToken, strings.NewReader(body), h...)
}

// TestMCPTransportErrorsAreJSON: what the transport refuses before any tool
// (not MCP at all) is answered in the API's error shape.
func TestMCPTransportErrorsAreJSON(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.BodyLimit = 2048 }, nil)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	n.mcpPost(ping, "Content-Type", "text/plain").wantError(t, http.StatusUnsupportedMediaType, codeUnsupportedMediaType, "Content-Type")
	n.mcpPost(ping, "Accept", "application/json").wantError(t, http.StatusBadRequest, codeBadRequest, "")
	n.mcpPost(`{"jsonrpc":"2.0",`).wantError(t, http.StatusBadRequest, codeBadRequest, "")
	n.mcpPost(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", 4096)+`"}}`).
		wantError(t, http.StatusRequestEntityTooLarge, codeBodyTooLarge, "")
	r := n.request(http.MethodGet, "/mcp", testToken, nil)
	r.wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed, "")
	if !strings.Contains(r.header.Get("Allow"), http.MethodPost) {
		t.Errorf("Allow = %q", r.header.Get("Allow"))
	}
	n.request(http.MethodDelete, "/mcp", testToken, nil).wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed, "")

	// DNS rebinding: a loopback node refuses a Host that is not loopback.
	req, err := http.NewRequest(http.MethodPost, n.url+"/mcp", strings.NewReader(ping))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "civnode.example"
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp.Body)}.
		wantError(t, http.StatusForbidden, codeForbidden, "")

	// A ping is answered; a call of an unknown tool is a JSON-RPC error.
	r = n.mcpPost(ping)
	if r.status != http.StatusOK || string(r.body) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("ping answered %d %s", r.status, r.body)
	}
	r = n.mcpPost(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"drop_tables","arguments":{}}}`)
	var rpc struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &rpc); err != nil || rpc.Error == nil {
		t.Errorf("unknown tool answered %d %s", r.status, r.body)
	}
}

// TestMCPRawExchange is the wire exchange of a client that speaks JSON-RPC
// itself: initialize, then tools/call. Run with -v to see it.
func TestMCPRawExchange(t *testing.T) {
	w := newMCPWorld(t)
	w.create(w.tokens["pub"], nil)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"curl","version":"8"}}}`
	r := w.mcpPost(initialize)
	t.Logf("POST /mcp %s\n→ %d %s %s", initialize, r.status, r.header.Get("Content-Type"), r.body)
	var init struct {
		Result struct {
			ProtocolVersion string         `json:"protocolVersion"`
			Capabilities    map[string]any `json:"capabilities"`
			ServerInfo      struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &init); err != nil || r.status != http.StatusOK ||
		init.Result.ProtocolVersion != "2025-11-25" || init.Result.ServerInfo.Name != "civnode" || init.Result.Capabilities["tools"] == nil {
		t.Fatalf("initialize answered %d %s", r.status, r.body)
	}
	if r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a stateless server set Mcp-Session-Id %q", r.header.Get("Mcp-Session-Id"))
	}
	initialized := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if r := w.mcpPost(initialized, "Mcp-Protocol-Version", "2025-11-25"); r.status != http.StatusAccepted || len(r.body) != 0 {
		t.Errorf("notifications/initialized answered %d %s", r.status, r.body)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_missions","arguments":{"state":"created","limit":1}}}`
	r = w.mcpPost(call, "Mcp-Protocol-Version", "2025-11-25")
	t.Logf("POST /mcp %s\n→ %d %s %s", call, r.status, r.header.Get("Content-Type"), r.body)
	var result struct {
		Result struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &result); err != nil || r.status != http.StatusOK || result.Result.IsError {
		t.Fatalf("tools/call answered %d %s", r.status, r.body)
	}
	want := w.get("/v1/core/missions?state=created&limit=1")
	if len(result.Result.Content) != 1 || result.Result.Content[0].Type != "text" || result.Result.Content[0].Text != string(want.body) {
		t.Errorf("content %+v, want the route's body %s", result.Result.Content, want.body)
	}
	var got, wantV any
	_ = json.Unmarshal(result.Result.StructuredContent, &got)
	_ = json.Unmarshal(want.body, &wantV)
	if !reflect.DeepEqual(got, wantV) {
		t.Errorf("structuredContent %s, want %s", result.Result.StructuredContent, want.body)
	}
	// Arguments are decoded as a body is: a duplicate member is refused.
	r = w.mcpPost(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_missions","arguments":{"limit":1,"limit":2}}}`,
		"Mcp-Protocol-Version", "2025-11-25")
	if !bytes.Contains(r.body, []byte(`"isError":true`)) || !bytes.Contains(r.body, []byte(`invalid_json`)) {
		t.Errorf("duplicate argument answered %d %s", r.status, r.body)
	}
}

// TestMCPSchemaEditsMatchArguments: schema edits that name an argument the
// tool does not have are refused, not turned into a schema that invents it.
func TestMCPSchemaEditsMatchArguments(t *testing.T) {
	tool := newTool(&Server{}, toolSpec[listMissionsArgs]{name: "x",
		schema: func(sc *jsonschema.Schema) { describe(sc, "typo", "stat") }})
	if tool.err == nil || !strings.Contains(tool.err.Error(), "stat") {
		t.Errorf("an edit of a missing argument: err = %v", tool.err)
	}
	if tool := newTool(&Server{}, toolSpec[listMissionsArgs]{name: "x",
		schema: func(sc *jsonschema.Schema) { describe(sc, "ok", "state") }}); tool.err != nil {
		t.Errorf("an edit of a real argument: %v", tool.err)
	}
}
