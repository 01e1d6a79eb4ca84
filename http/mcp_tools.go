package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/logkey"
)

// The MCP tools (docs/mcp.md). A tool is its HTTP route by other means: it runs
// the route's command or read with the caller's actor, under the route's
// flags, and answers with the route's body. In order, as the route would:
//
//   - admitKind with the route's flags: an observer may call query_events only,
//     and the refusal is the route's 403 body;
//   - the arguments are decoded like a request body (decodeBody: I-JSON, no
//     unknown member, the right types), so a bad argument is the route's 400
//     with the same code and field. Arguments the route takes from its path
//     (mission_id, agent_id, receipt_id) or query are arguments here; a query
//     is rebuilt from them and parsed by the route's own parser;
//   - the call runs under the route's time-out (routeRegistry: the registry
//     proxy's), lengthened by invoke_servicenet_agent_sync's wait, and in a
//     list slot when the route is a list (routeList);
//   - the answer is the route's body, byte for byte, as structuredContent and
//     as one text content; a failure is a result with isError set carrying
//     the body errorResponse makes of it, logged as writeError logs.
//
// The input schemas are inferred by the SDK's schema package
// (github.com/google/jsonschema-go) from the argument structs below, whose
// jsonschema tags describe each argument. The SDK does not validate with them
// (tools are added with Server.AddTool): decodeBody does, so that errors
// match the HTTP API's.

// mcpTool is one tool: its definition and handler.
type mcpTool struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
	// limit is the longest one call may run (runTool's time-out at its
	// longest), which a batch that calls the tool may run too.
	limit time.Duration
	// name and err are set instead when the tool could not be built.
	name string
	err  error
}

// toolSpec describes a tool whose arguments decode into In.
type toolSpec[In any] struct {
	name, title, description string
	// flags are those of the tool's HTTP route: who may call it (admitKind),
	// whether it runs in a list slot, and its time-out.
	flags       routeFlags
	annotations *mcp.ToolAnnotations
	// schema, if set, edits the schema inferred from In: bounds, enums, and
	// the descriptions of nested fields that tags cannot reach.
	schema func(*jsonschema.Schema)
	// wait, if set, is how much longer than its route the call may run, or
	// the error of the argument that says so.
	wait func(In) (time.Duration, error)
	run  func(ctx context.Context, a commands.Actor, in In) (toolAnswer, error)
}

// toolAnswer is a tool's successful answer: the HTTP route's body.
type toolAnswer struct {
	body []byte
	// truncated is the route's PageTruncatedHeader, as _meta.page_truncated.
	truncated bool
}

// jsonAnswer encodes v as the route does (writeJSON).
func jsonAnswer(v any) (toolAnswer, error) {
	b, err := marshalJSON(v)
	return toolAnswer{body: b}, err
}

// Bounds of invoke_servicenet_agent_sync's wait, in seconds.
const (
	defaultInvokeWait = 30 * time.Second
	maxInvokeWait     = 120 * time.Second
)

// mcpTools are the tools of the routes this server serves.
func (s *Server) mcpTools() []mcpTool {
	var tools []mcpTool
	if s.missions != nil {
		tools = append(tools,
			newTool(s, toolSpec[listMissionsArgs]{
				name: "list_missions", title: "List missions",
				description: "Lists missions, oldest first, with the filters and paging of GET /v1/core/missions. " +
					"Answers {missions, next_cursor}; pass next_cursor as cursor for the next page.",
				flags: routeList, annotations: readOnly(),
				schema: func(sc *jsonschema.Schema) {
					property(sc, "state").Enum = []any{events.StateCreated, events.StateClaimed, events.StateCompleted, events.StateSettled}
					limitSchema(property(sc, "limit"))
				},
				run: func(ctx context.Context, _ commands.Actor, in listMissionsArgs) (toolAnswer, error) {
					page, err := s.listMissions(ctx, in.query())
					if err != nil {
						return toolAnswer{}, err
					}
					return jsonAnswer(page)
				},
			}),
			newTool(s, toolSpec[missionIDArgs]{
				name: "get_mission", title: "Get a mission",
				description: "Returns one mission's full record, as GET /v1/core/missions/{mission_id}.",
				flags:       routeList, annotations: readOnly(),
				run: func(_ context.Context, _ commands.Actor, in missionIDArgs) (toolAnswer, error) {
					if in.MissionID == "" {
						return toolAnswer{}, commands.Missing("mission_id")
					}
					rec, err := s.missionByID(in.MissionID)
					if err != nil {
						return toolAnswer{}, err
					}
					return jsonAnswer(rec)
				},
			}),
			newTool(s, toolSpec[publishMissionArgs]{
				name: "publish_mission", title: "Publish a mission",
				description: "Publishes a mission, as POST /v1/core/missions: the token must act for the publisher. " +
					"Answers the mission's full record.",
				annotations: write(),
				schema:      publishMissionSchema,
				run: func(ctx context.Context, a commands.Actor, in publishMissionArgs) (toolAnswer, error) {
					res, err := s.mission.Create(ctx, a, commands.CreateMissionInput(in))
					if err != nil {
						return toolAnswer{}, err
					}
					return s.missionAnswer(res)
				},
			}),
			newTool(s, toolSpec[claimMissionArgs]{
				name: "claim_mission", title: "Claim a mission",
				description: "Claims a created mission for claimer, as POST /v1/core/missions/{mission_id}/claim: " +
					"the token must act for the claimer, which must meet the mission's required role and faction. " +
					"Answers the mission's full record.",
				annotations: write(),
				run: func(ctx context.Context, a commands.Actor, in claimMissionArgs) (toolAnswer, error) {
					return missionStep(ctx, s, a, in.MissionID, s.mission.Claim, commands.ClaimMissionInput{Claimer: in.Claimer})
				},
			}),
			newTool(s, toolSpec[completeMissionArgs]{
				name: "complete_mission", title: "Complete a mission",
				description: "Completes a claimed mission with its result, as POST /v1/core/missions/{mission_id}/complete: " +
					"the token must act for the claimer. Answers the mission's full record.",
				annotations: write(),
				schema:      func(sc *jsonschema.Schema) { nonNull(property(sc, "result")) },
				run: func(ctx context.Context, a commands.Actor, in completeMissionArgs) (toolAnswer, error) {
					return missionStep(ctx, s, a, in.MissionID, s.mission.Complete, commands.CompleteMissionInput{Result: in.Result})
				},
			}),
			newTool(s, toolSpec[missionIDArgs]{
				name: "settle_mission", title: "Settle a mission",
				description: "Settles a completed mission and pays its reward, as POST /v1/core/missions/{mission_id}/settle: " +
					"the token must act for the publisher or govern the mission's subnet. Irreversible. " +
					"Answers the mission's full record.",
				annotations: write(),
				run: func(ctx context.Context, a commands.Actor, in missionIDArgs) (toolAnswer, error) {
					return missionStep(ctx, s, a, in.MissionID, s.mission.Settle, commands.SettleMissionInput{})
				},
			}),
		)
	}
	if s.identities != nil {
		tools = append(tools, newTool(s, toolSpec[getIdentityArgs]{
			name: "get_identity", title: "Get a public identity",
			description: "Returns one identity's public record, as GET /v1/civilization/public-identity: " +
				"give exactly one of agent_did and public_id.",
			annotations: readOnly(),
			run: func(_ context.Context, _ commands.Actor, in getIdentityArgs) (toolAnswer, error) {
				rec, err := s.identityFromQuery(in.query())
				if err != nil {
					return toolAnswer{}, err
				}
				return jsonAnswer(rec)
			},
		}))
	}
	tools = append(tools, newTool(s, toolSpec[queryEventsArgs]{
		name: "query_events", title: "Query the event log",
		description: "Returns signed events of the node's log, oldest first, as GET /v1/events: {events, total}, " +
			"total counting every match before limit. Page with since set to the last event's timestamp.",
		flags: routeObserver | routeList, annotations: readOnly(),
		schema: func(sc *jsonschema.Schema) {
			limitSchema(property(sc, "limit"))
			property(sc, "since").Format = "date-time"
		},
		run: func(ctx context.Context, _ commands.Actor, in queryEventsArgs) (toolAnswer, error) {
			qry, err := eventsQuery(in.query())
			if err != nil {
				return toolAnswer{}, err
			}
			var buf bytes.Buffer
			full, err := s.writeEvents(ctx, &buf, qry)
			if err != nil {
				return toolAnswer{}, err
			}
			return toolAnswer{body: buf.Bytes(), truncated: full}, nil
		},
	}))
	if s.servicenet != nil {
		tools = append(tools,
			newTool(s, toolSpec[invokeSyncArgs]{
				name: "invoke_servicenet_agent_sync", title: "Invoke a registry agent and wait",
				description: "Invokes a registry agent, as POST /v1/core/servicenet/agents/{agent_id}/invoke, and when the " +
					"registry accepts a task polls it with backoff until it completes or fails or wait seconds pass. " +
					"Answers the invoke's body when there is no task ({status: completed, result}, or the OAuth consent " +
					"to obtain), else the task {receipt_id, agent_id, task_id, status, result | error}; a task still " +
					"running is polled further with get_servicenet_receipt.",
				flags: routeRegistry, annotations: invoke(),
				schema: func(sc *jsonschema.Schema) {
					invokeSchema(sc)
					w := property(sc, "wait")
					nonNull(w)
					w.Minimum, w.Maximum = ptr(1.0), ptr(maxInvokeWait.Seconds())
				},
				wait: invokeSyncArgs.waitFor,
				run: func(ctx context.Context, a commands.Actor, in invokeSyncArgs) (toolAnswer, error) {
					wait, err := in.waitFor()
					if err != nil {
						return toolAnswer{}, err
					}
					res, err := s.servicenet.InvokeAndWait(ctx, a, in.AgentID, in.input(), wait)
					if err != nil {
						return toolAnswer{}, err
					}
					return jsonAnswer(res.Body())
				},
			}),
			newTool(s, toolSpec[invokeArgs]{
				name: "invoke_servicenet_agent_async", title: "Invoke a registry agent",
				description: "Invokes a registry agent, as POST /v1/core/servicenet/agents/{agent_id}/invoke, and answers " +
					"at once with its body: {status: completed, result}, {status: accepted, receipt_id, task_id} " +
					"(follow it with get_servicenet_receipt), or the OAuth consent to obtain.",
				flags: routeRegistry, annotations: invoke(),
				schema: invokeSchema,
				run: func(ctx context.Context, a commands.Actor, in invokeArgs) (toolAnswer, error) {
					res, err := s.servicenet.Invoke(ctx, a, in.AgentID, in.input())
					if err != nil {
						return toolAnswer{}, err
					}
					return jsonAnswer(res.Body())
				},
			}),
			newTool(s, toolSpec[receiptArgs]{
				name: "get_servicenet_receipt", title: "Get an invocation's task",
				description: "Fetches the task of an accepted invocation by its receipt_id, as " +
					"POST /v1/core/servicenet/agents/{agent_id}/tasks/{task_id}/get: " +
					"{receipt_id, agent_id, task_id, status, result | error}. An agent token sees only its own invocations.",
				flags: routeRegistry, annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptr(true)},
				run: func(ctx context.Context, a commands.Actor, in receiptArgs) (toolAnswer, error) {
					if in.ReceiptID == "" {
						return toolAnswer{}, commands.Missing("receipt_id")
					}
					t, err := s.servicenet.Receipt(ctx, a, in.ReceiptID)
					if err != nil {
						return toolAnswer{}, err
					}
					return jsonAnswer(t)
				},
			}),
		)
	}
	return tools
}

// servicenetTools are the tools of the registry proxy, offered only by a
// node with a registry (registryToolsOff).
var servicenetTools = []string{"invoke_servicenet_agent_sync", "invoke_servicenet_agent_async", "get_servicenet_receipt"}

// missionStep runs one lifecycle step as the route does (missionTransition).
func missionStep[In any](ctx context.Context, s *Server, a commands.Actor, missionID string,
	step func(context.Context, commands.Actor, string, In) (commands.MissionResult, error), in In) (toolAnswer, error) {
	if missionID == "" {
		return toolAnswer{}, commands.Missing("mission_id")
	}
	res, err := step(ctx, a, missionID, in)
	if err != nil {
		return toolAnswer{}, err
	}
	return s.missionAnswer(res)
}

// missionAnswer is a mission write's answer, the mission's full record
// (writeMission).
func (s *Server) missionAnswer(res commands.MissionResult) (toolAnswer, error) {
	rec, err := s.writtenMission(res)
	if err != nil {
		return toolAnswer{}, err
	}
	return jsonAnswer(rec)
}

// newTool builds spec's tool. A schema that cannot be inferred, or edits
// that name an argument the tool does not have, leave the tool with err set:
// mcpRoutes then does not offer it and logs why (a programming error, which
// TestMCPToolList finds).
func newTool[In any](s *Server, spec toolSpec[In]) mcpTool {
	schema, err := jsonschema.For[In](schemaOptions)
	if err != nil {
		return mcpTool{name: spec.name, err: fmt.Errorf("input schema: %w", err)}
	}
	if spec.schema != nil {
		inferred, _ := jsonschema.For[In](schemaOptions)
		spec.schema(schema)
		if err := sameProperties(inferred, schema, ""); err != nil {
			return mcpTool{name: spec.name, err: err}
		}
	}
	tool := &mcp.Tool{Name: spec.name, Title: spec.title, Description: spec.description,
		InputSchema: schema, Annotations: spec.annotations}
	limit := s.handlerTimeout
	if spec.flags&routeRegistry != 0 {
		limit = s.registryTimeout
	}
	if spec.wait != nil {
		limit += maxInvokeWait
	}
	return mcpTool{tool: tool, limit: limit, handler: func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		defer func() {
			if v := recover(); v != nil {
				s.logger.LogAttrs(ctx, slog.LevelError, "tool panicked", slog.String(logkey.Tool, spec.name),
					slog.String(logkey.Panic, fmt.Sprint(v)), slog.String(logkey.Stack, string(debug.Stack())))
				res = s.toolError(ctx, spec.name, fmt.Errorf("tool %s panicked", spec.name))
			}
		}()
		ans, err := runTool(ctx, s, req, spec)
		if err != nil {
			return s.toolError(ctx, spec.name, err), nil
		}
		return ans.result(), nil
	}}
}

// runTool runs one call of spec's tool.
func runTool[In any](ctx context.Context, s *Server, req *mcp.CallToolRequest, spec toolSpec[In]) (toolAnswer, error) {
	a, ok := toolActor(req)
	if !ok { // the transport runs behind requireAuth; this is a wiring fault
		return toolAnswer{}, fmt.Errorf("tool %s: no actor in the request", spec.name)
	}
	if err := admitKind(a, spec.flags); err != nil {
		return toolAnswer{}, err
	}
	var in In
	if err := decodeArguments(req.Params.Arguments, &in); err != nil {
		return toolAnswer{}, err
	}
	timeout := s.handlerTimeout
	if spec.flags&routeRegistry != 0 {
		timeout = s.registryTimeout
	}
	if spec.wait != nil {
		wait, err := spec.wait(in)
		if err != nil {
			return toolAnswer{}, err
		}
		timeout += wait
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The SDK ends a call with its POST only for the newest protocol; for the
	// others, the exchange does (a client gone, a batch's deadline).
	ctx, unbind := exchangeOf(ctx).bind(ctx)
	defer unbind()
	if err := ctx.Err(); err != nil { // a batch past its deadline runs nothing more
		return toolAnswer{}, err
	}
	if spec.flags&routeList != 0 { // withListSlot
		if err := s.reservePage(ctx); err != nil {
			return toolAnswer{}, err
		}
		select {
		case s.listSlots <- struct{}{}:
		case <-ctx.Done():
			return toolAnswer{}, ctx.Err()
		}
		defer func() { <-s.listSlots }()
	}
	return spec.run(ctx, a, in)
}

// decodeArguments decodes a call's arguments as a request body; none is {}.
func decodeArguments(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	return decodeBody(raw, dst)
}

// result is the answer as a tool result.
func (a toolAnswer) result() *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		StructuredContent: json.RawMessage(a.body),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(a.body)}},
	}
	if a.truncated {
		res.Meta = mcp.Meta{"page_truncated": true}
	}
	return res
}

// toolError is the result of a failed call: the error body the route would
// answer, logged as writeError logs it.
func (s *Server) toolError(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	status, body, internal := errorResponse(err)
	if internal {
		s.logger.LogAttrs(ctx, slog.LevelError, "tool call failed",
			slog.String(logkey.Tool, tool), slog.Int(logkey.Status, status), slog.String(logkey.Err, err.Error()))
	} else {
		s.logger.LogAttrs(ctx, slog.LevelDebug, "tool call refused",
			slog.String(logkey.Tool, tool), slog.Int(logkey.Status, status), slog.String(logkey.Code, body.Code), slog.String(logkey.Field, body.Field))
	}
	b, mErr := marshalJSON(body)
	if mErr != nil { // as in writeError
		b = []byte(`{"error":"internal error","code":"internal"}` + "\n")
	}
	return &mcp.CallToolResult{
		IsError:           true,
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}
}

// The arguments of each tool. Where a route takes a body, the tool takes the
// body's members under the same names and types, plus what the route takes
// from its path.

// listMissionsArgs are GET /v1/core/missions's query parameters.
type listMissionsArgs struct {
	State        string `json:"state,omitempty" jsonschema:"only missions in this state"`
	SubnetID     string `json:"subnet_id,omitempty" jsonschema:"only missions of this subnet, e.g. genesis"`
	Domain       string `json:"domain,omitempty" jsonschema:"only missions of this domain, e.g. security"`
	RequiredRole string `json:"required_role,omitempty" jsonschema:"only missions that require this role, e.g. enforcer"`
	Publisher    string `json:"publisher,omitempty" jsonschema:"only missions of this publisher (a public_id or subnet id)"`
	Limit        *int64 `json:"limit,omitempty" jsonschema:"at most this many missions (default 100)"`
	Cursor       string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

func (a listMissionsArgs) query() url.Values {
	return queryOf("state", a.State, "subnet_id", a.SubnetID, "domain", a.Domain,
		"required_role", a.RequiredRole, "publisher", a.Publisher, "limit", intParam(a.Limit), "cursor", a.Cursor)
}

// missionIDArgs name a mission (get_mission, settle_mission: settle's body is {}).
type missionIDArgs struct {
	MissionID string `json:"mission_id" jsonschema:"the mission's id"`
}

// publishMissionArgs are POST /v1/core/missions's body; the conversion to
// commands.CreateMissionInput keeps the two the same at compile time.
type publishMissionArgs struct {
	Title           string                `json:"title" jsonschema:"a short display title, 1 to 200 characters"`
	Description     string                `json:"description" jsonschema:"the full objective"`
	Publisher       string                `json:"publisher" jsonschema:"the public_id (agent, organization) or governed subnet id (planetary_government) that publishes; the token must act for it"`
	PublisherKind   string                `json:"publisher_kind" jsonschema:"the publisher's kind"`
	Domain          string                `json:"domain" jsonschema:"the thematic domain, e.g. security, logistics, research"`
	SubnetID        string                `json:"subnet_id" jsonschema:"the subnet where the mission is active, e.g. genesis"`
	ZoneID          *string               `json:"zone_id,omitempty" jsonschema:"a zone inside the subnet"`
	RequiredRole    *string               `json:"required_role,omitempty" jsonschema:"the role a claimer must hold; null or omitted: any role"`
	RequiredFaction *string               `json:"required_faction,omitempty" jsonschema:"the faction a claimer must belong to; null or omitted: open to all"`
	Reward          *commands.RewardInput `json:"reward" jsonschema:"what settling pays, every member an integer of at least 0"`
	Payload         json.RawMessage       `json:"payload,omitempty" jsonschema:"task parameters for the claimer, any JSON object"`
}

// claimMissionArgs are POST /v1/core/missions/{mission_id}/claim.
type claimMissionArgs struct {
	MissionID string `json:"mission_id" jsonschema:"the mission's id"`
	Claimer   string `json:"claimer" jsonschema:"the public_id that claims; the token must act for it"`
}

// completeMissionArgs are POST /v1/core/missions/{mission_id}/complete.
type completeMissionArgs struct {
	MissionID string  `json:"mission_id" jsonschema:"the mission's id"`
	Result    *string `json:"result" jsonschema:"the result for the publisher: free text or serialised JSON, 1 to 262144 bytes"`
}

// getIdentityArgs are GET /v1/civilization/public-identity's query.
type getIdentityArgs struct {
	AgentDID string `json:"agent_did,omitempty" jsonschema:"the identity's agent DID; give this or public_id"`
	PublicID string `json:"public_id,omitempty" jsonschema:"the identity's public slug; give this or agent_did"`
}

func (a getIdentityArgs) query() url.Values {
	return queryOf("agent_did", a.AgentDID, "public_id", a.PublicID)
}

// queryEventsArgs are GET /v1/events's query parameters.
type queryEventsArgs struct {
	Since string `json:"since,omitempty" jsonschema:"only events after this RFC 3339 timestamp, e.g. 2026-11-21T23:05:25.123456Z; omit for the whole log"`
	Limit *int64 `json:"limit,omitempty" jsonschema:"at most this many events (default 100)"`
	Type  string `json:"type,omitempty" jsonschema:"only events of this type, e.g. mission.created, or of a prefix ending in .*, e.g. mission.*"`
}

func (a queryEventsArgs) query() url.Values {
	return queryOf("since", a.Since, "limit", intParam(a.Limit), "type", a.Type)
}

// invokeArgs are POST /v1/core/servicenet/agents/{agent_id}/invoke.
type invokeArgs struct {
	AgentID    string                    `json:"agent_id" jsonschema:"the registry agent to invoke"`
	Message    *string                   `json:"message" jsonschema:"the natural-language instruction"`
	Input      json.RawMessage           `json:"input,omitempty" jsonschema:"an object matching the input_schema of the agent's card"`
	Settlement *commands.SettlementInput `json:"settlement,omitempty" jsonschema:"x402 payment for a paid agent; omit for free agents"`
	AuthToken  *string                   `json:"auth_token,omitempty" jsonschema:"the OAuth access token of an agent with security schemes, obtained after consent"`
}

func (a invokeArgs) input() commands.InvokeInput {
	return commands.InvokeInput{Message: a.Message, Input: a.Input, Settlement: a.Settlement, AuthToken: a.AuthToken}
}

// invokeSyncArgs are invokeArgs and how long to wait for the task.
type invokeSyncArgs struct {
	invokeArgs
	Wait *int64 `json:"wait,omitempty" jsonschema:"seconds to wait for an accepted task to end (default 30)"`
}

// waitFor is the wait asked for: 1..120 s, default 30 s.
func (a invokeSyncArgs) waitFor() (time.Duration, error) {
	if a.Wait == nil {
		return defaultInvokeWait, nil
	}
	if *a.Wait < 1 || *a.Wait > int64(maxInvokeWait/time.Second) {
		return 0, invalidField("wait", "wait must be an integer from 1 to %d (seconds)", int64(maxInvokeWait/time.Second))
	}
	return time.Duration(*a.Wait) * time.Second, nil
}

// receiptArgs name an invocation by its receipt.
type receiptArgs struct {
	ReceiptID string `json:"receipt_id" jsonschema:"the receipt_id an accepted invocation answered"`
}

// queryOf builds a query from name, value pairs, leaving out empty values
// (which the parsers read as absent too).
func queryOf(pairs ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return q
}

// intParam is an integer argument as its query parameter; nil is absent.
func intParam(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}
