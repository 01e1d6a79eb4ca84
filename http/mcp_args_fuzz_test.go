package http

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/civnode/civnode/commands"
)

// toolArgKinds are the argument types of the MCP tools, by tool name.
var toolArgKinds = []struct {
	tool string
	new  func() any
}{
	{"list_missions", func() any { return new(listMissionsArgs) }},
	{"get_mission", func() any { return new(missionIDArgs) }},
	{"publish_mission", func() any { return new(publishMissionArgs) }},
	{"claim_mission", func() any { return new(claimMissionArgs) }},
	{"complete_mission", func() any { return new(completeMissionArgs) }},
	{"settle_mission", func() any { return new(missionIDArgs) }},
	{"get_identity", func() any { return new(getIdentityArgs) }},
	{"query_events", func() any { return new(queryEventsArgs) }},
	{"invoke_servicenet_agent_sync", func() any { return new(invokeSyncArgs) }},
	{"invoke_servicenet_agent_async", func() any { return new(invokeArgs) }},
	{"get_servicenet_receipt", func() any { return new(receiptArgs) }},
}

var docToolCall = regexp.MustCompile(`"name":"([a-z_]+)","arguments":(\{.*\})\}\}$`)

// FuzzDecodeToolArguments decodes MCP tool arguments as runTool does
// (decodeArguments) and holds that:
//   - arguments that are empty or blank are {}, and any others decode exactly
//     as the same bytes would as a request body, with the same refusals;
//   - an accepted argument object passes the round trip of request bodies;
//   - a tool's arguments are its route's body plus what the route takes from
//     its path: a body the route accepts is accepted by the tool with the same
//     values, and publish_mission's arguments are the create body exactly;
//   - the query a tool rebuilds from its arguments is one checkQuery passes,
//     that parses back to the same values, and that the route's own parser
//     reads to the arguments given or refuses with a 400 naming one of them;
//   - invoke_servicenet_agent_sync's wait is 30 s when absent, the seconds
//     given from 1 to 120, and otherwise 400 invalid_field wait.
func FuzzDecodeToolArguments(f *testing.F) {
	seeded := 0
	for _, r := range docRequests(f) {
		m := docToolCall.FindStringSubmatch(r.body)
		if r.path != "/mcp" || m == nil {
			continue
		}
		for i, k := range toolArgKinds {
			if k.tool == m[1] {
				f.Add(uint8(i), []byte(m[2]))
				seeded++
			}
		}
	}
	if seeded == 0 {
		f.Fatal("no tool call among the docs' examples")
	}
	for i, s := range []string{
		``, ` `, `{}`, `null`, `[]`, `{"limit":5,"state":"created","cursor":"x"}`, `{"mission_id":"m"}`,
		`{"title":"t","description":"d","publisher":"ada","publisher_kind":"agent","domain":"security","subnet_id":"genesis","reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{"a":[1]}}`,
		`{"mission_id":"m","claimer":"ada"}`, `{"mission_id":"m","result":"done"}`, `{"mission_id":"m"}`,
		`{"agent_did":"did:key:z6MkneZpyJVB1FZyREw8YpUejYMGyCqJXvCfdDWAv2TCoiSK"}`,
		`{"since":"2026-11-21T23:05:25Z","limit":1000,"type":"mission.*"}`, `{"agent_id":"a","message":"m","wait":121}`,
		`{"agent_id":"a","message":"m","input":{"x":1},"settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402"}}}`,
		`{"receipt_id":"r"}`, `{"limit":-1}`, `{"limit":0}`, `{"since":"x y"}`, `{"type":"a&b=c"}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		k := toolArgKinds[int(kind)%len(toolArgKinds)]
		in := k.new()
		err := decodeArguments(raw, in)
		body := raw
		if len(bytes.TrimSpace(raw)) == 0 {
			body = []byte(`{}`)
		}
		want := k.new()
		werr := decodeBody(body, want)
		if !sameError(err, werr) || !reflect.DeepEqual(in, want) {
			t.Fatalf("%s: %q: decodeArguments %v %#v, decodeBody of %q %v %#v", k.tool, raw, err, in, body, werr, want)
		}
		checkToolBody(t, k.tool, body, in, err)
		if err != nil {
			checkClientError(t, body, err)
			return
		}
		checkRoundTrip(t, body, in, k.new)
		checkToolQuery(t, k.tool, in)
	})
}

// checkToolBody holds that a body the tool's route accepts is accepted by
// the tool, with the same values.
func checkToolBody(t *testing.T, tool string, body []byte, in any, err error) {
	t.Helper()
	var route any
	var same func() bool
	switch a := in.(type) {
	case *publishMissionArgs:
		var b commands.CreateMissionInput
		berr := decodeBody(body, &b)
		if !sameError(err, berr) {
			t.Fatalf("%s: %q: arguments %v, body %v", tool, body, err, berr)
		}
		if err == nil && !reflect.DeepEqual(commands.CreateMissionInput(*a), b) {
			t.Fatalf("%s: %q: arguments %#v, body %#v", tool, body, *a, b)
		}
		return
	case *claimMissionArgs:
		var b commands.ClaimMissionInput
		route, same = &b, func() bool { return a.MissionID == "" && a.Claimer == b.Claimer }
	case *completeMissionArgs:
		var b commands.CompleteMissionInput
		route, same = &b, func() bool { return a.MissionID == "" && reflect.DeepEqual(a.Result, b.Result) }
	case *missionIDArgs:
		var b commands.SettleMissionInput
		route, same = &b, func() bool { return a.MissionID == "" }
	case *invokeArgs:
		var b commands.InvokeInput
		route, same = &b, func() bool { return a.AgentID == "" && reflect.DeepEqual(a.input(), b) }
	case *invokeSyncArgs:
		var b commands.InvokeInput
		route, same = &b, func() bool { return a.AgentID == "" && a.Wait == nil && reflect.DeepEqual(a.input(), b) }
	default:
		return
	}
	if decodeBody(body, route) != nil {
		return
	}
	if err != nil || !same() {
		t.Fatalf("%s: %q: the route's body decodes to %#v, the arguments to %#v, %v", tool, body, route, in, err)
	}
}

// checkToolQuery checks the query a tool rebuilds from its arguments.
func checkToolQuery(t *testing.T, tool string, in any) {
	t.Helper()
	refused := func(err error, params ...string) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !slices.Contains(params, e.Field) {
			t.Fatalf("%s: %#v: %v, want a 400 naming one of %v", tool, in, err, params)
		}
	}
	switch a := in.(type) {
	case *queryEventsArgs:
		q := rebuiltQuery(t, tool, a.query())
		qry, err := eventsQuery(q)
		if err != nil {
			refused(err, "since", "limit", "type")
			return
		}
		if a.Limit != nil && int64(qry.Limit) != *a.Limit || a.Limit == nil && qry.Limit != defaultLimit ||
			qry.Type != a.Type || (a.Since == "") != qry.Since.IsZero() {
			t.Fatalf("%s: %#v read as %+v", tool, a, qry)
		}
	case *listMissionsArgs:
		q := rebuiltQuery(t, tool, a.query())
		limit, cursor, err := pageQuery(q, defaultLimit)
		if err != nil {
			refused(err, "limit")
			return
		}
		if a.Limit != nil && int64(limit) != *a.Limit || a.Limit == nil && limit != defaultLimit || cursor != a.Cursor {
			t.Fatalf("%s: %#v read as limit %d, cursor %q", tool, a, limit, cursor)
		}
		for name, v := range map[string]string{"state": a.State, "subnet_id": a.SubnetID, "domain": a.Domain,
			"required_role": a.RequiredRole, "publisher": a.Publisher} {
			if got, err := queryValue(q, name); err != nil || got != v {
				t.Fatalf("%s: %#v: %s read as %q, %v", tool, a, name, got, err)
			}
		}
	case *getIdentityArgs:
		q := rebuiltQuery(t, tool, a.query())
		did, err1 := queryValue(q, "agent_did")
		slug, err2 := queryValue(q, "public_id")
		if err1 != nil || err2 != nil || did != a.AgentDID || slug != a.PublicID {
			t.Fatalf("%s: %#v read as %q, %q (%v, %v)", tool, a, did, slug, err1, err2)
		}
	case *invokeSyncArgs:
		wait, err := a.waitFor()
		switch {
		case a.Wait == nil:
			if err != nil || wait != defaultInvokeWait {
				t.Fatalf("%s: no wait gives %v, %v", tool, wait, err)
			}
		case *a.Wait >= 1 && *a.Wait <= 120:
			if err != nil || wait != time.Duration(*a.Wait)*time.Second {
				t.Fatalf("%s: wait %d gives %v, %v", tool, *a.Wait, wait, err)
			}
		default:
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != codeInvalidField || e.Field != "wait" {
				t.Fatalf("%s: wait %d gives %v, %v", tool, *a.Wait, wait, err)
			}
		}
	}
}

// rebuiltQuery holds that q, a tool's rebuilt query, survives the trip
// through a URL that an HTTP client of the route would make, and returns it.
func rebuiltQuery(t *testing.T, tool string, q url.Values) url.Values {
	t.Helper()
	raw := q.Encode()
	if err := checkQuery(raw); err != nil {
		t.Fatalf("%s: rebuilt query %q: %v", tool, raw, err)
	}
	back, err := url.ParseQuery(raw)
	if err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("%s: rebuilt query %q parses to %v, %v; want %v", tool, raw, back, err, q)
	}
	return q
}
