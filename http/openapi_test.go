package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/stream"
	"github.com/civnode/civnode/witness"
)

// openAPIValidateDir holds the validator script and its pinned dependencies.
var openAPIValidateDir = filepath.Join("testdata", "openapi-validate")

// routeAlias is a documented path that no route of its own serves: the route
// named by route answers it, with its parameter param bound to value. The
// document and docs/api.md describe these apart because they answer apart.
type routeAlias struct {
	route, param, value string
}

var routeAliases = map[string]routeAlias{
	// handleGetMission hands "my" to handleMyMissions: httprouter cannot hold
	// a static segment beside a parameter.
	"GET /v1/core/missions/my": {route: "GET /v1/core/missions/{mission_id}", param: "mission_id", value: "my"},
	// The console's catch-all answers its bare directory with its index page.
	"GET /v1/console/": {route: "GET /v1/console/{file}", param: "file", value: "/"},
}

// wiredNode is a server with every optional part wired as serve wires it (the
// stream, the registry proxy, payment accounts, tokens, identities, missions,
// the game), with the identity ada and an agent and an observer token.
type wiredNode struct {
	*testNode
	agentToken, observerToken string
}

// newWiredNode wires a node whose registry proxy calls registryURL; "" is an
// address where nothing listens, so that every registry call fails at once
// with 502.
func newWiredNode(t *testing.T, registryURL string) *wiredNode {
	t.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	did := eventlog.DIDKey(key.Public().(ed25519.PublicKey))
	st, err := stream.Start(stream.Options{NodeDID: did, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if registryURL == "" {
		registryURL = "http://127.0.0.1:1"
	}
	registry, err := servicenet.New(servicenet.Config{BaseURL: registryURL, NodeDID: did,
		Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }, Retries: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger(), OnCommit: st.Publish},
		core.Config{Governs: []string{"genesis"}, Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets")), Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// The node witnesses its own log, so that the walk can have a checkpoint
	// cosigned and refused without a second node.
	wkey, err := witness.DeriveKey(key)
	if err != nil {
		t.Fatal(err)
	}
	wit, err := witness.New(witness.Options{Key: wkey, Name: witness.Name(did), Logs: []string{c.Log.VerifierKey()},
		StatePath: filepath.Join(t.TempDir(), "witness.json")})
	if err != nil {
		t.Fatal(err)
	}
	s := New(wired(Options{OwnerToken: testToken, Logger: discardLogger(), Governs: []string{"genesis"}, Stream: st, Witness: wit,
		Snapshot: func(context.Context) (Snapshot, error) {
			dir := filepath.Join(t.TempDir(), "snapshot")
			b, err := c.Log.Backup(dir)
			return Snapshot{Dir: dir, Backup: b}, err
		}}, c))
	t.Cleanup(s.streams.shutdown)
	for _, want := range []string{"GET /v1/stream", "POST /v1/admin/tokens", "POST /v1/admin/backup", "GET /v1/admin/payment-accounts",
		"GET /v1/civilization/identities", "POST /v1/core/missions", "GET /v1/game/status",
		"GET /v1/core/servicenet/agents", "POST /mcp", "GET /v1/openapi.json"} {
		if !slices.Contains(s.routeTable, want) {
			t.Fatalf("route %s is not registered: the server is not fully wired, and the test would prove nothing", want)
		}
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)

	owner := commands.Actor{TokenID: ownerTokenID, Kind: commands.ActorOwner, Governs: []string{"genesis"}}
	slug := "ada"
	if _, err := c.Identity.Bootstrap(context.Background(), owner, commands.BootstrapInput{DisplayName: "Ada", PublicID: &slug}); err != nil {
		t.Fatal(err)
	}
	agent, err := c.Tokens.Create(context.Background(), owner, commands.TokenKindAgent, slug)
	if err != nil {
		t.Fatal(err)
	}
	observer, err := c.Tokens.Create(context.Background(), owner, commands.TokenKindObserver, "")
	if err != nil {
		t.Fatal(err)
	}
	return &wiredNode{testNode: &testNode{t: t, log: c.Log, srv: s, url: hs.URL},
		agentToken: agent.Secret, observerToken: observer.Secret}
}

// checkpoint is the node's signed checkpoint of its current tree.
func (n *wiredNode) checkpoint() string {
	n.t.Helper()
	_, signed, err := n.log.TreeCheckpoint()
	if err != nil {
		n.t.Fatal(err)
	}
	return string(signed)
}

// routeParam matches an httprouter parameter (:name) or catch-all (*name).
var routeParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// documentedRoutes is the route table as the document and the docs write it:
// "METHOD /path" with every parameter as {name}.
func documentedRoutes(s *Server) []string {
	out := make([]string, 0, len(s.routeTable))
	for _, r := range s.routeTable {
		out = append(out, routeParam.ReplaceAllString(r, "{$1}"))
	}
	return out
}

// checkAliases checks that each alias is answered by the route it names,
// with the parameter bound as it says.
func checkAliases(t *testing.T, s *Server, routes []string) {
	t.Helper()
	for op, a := range routeAliases {
		if !slices.Contains(routes, a.route) {
			t.Errorf("%s is documented as served by %s, which is not registered", op, a.route)
			continue
		}
		method, path, _ := strings.Cut(op, " ")
		h, ps, _ := s.router.Lookup(method, path)
		if h == nil || ps.ByName(a.param) != a.value {
			t.Errorf("%s: the router binds %s=%q, want %q (served by %s)", op, a.param, ps.ByName(a.param), a.value, a.route)
		}
	}
}

type openAPIParameter struct {
	Ref      string `json:"$ref"`
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}

type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Tags        []string                   `json:"tags"`
	Security    *[]map[string][]string     `json:"security"`
	Parameters  []openAPIParameter         `json:"parameters"`
	RequestBody json.RawMessage            `json:"requestBody"`
	Responses   map[string]json.RawMessage `json:"responses"`
	Tokens      *[]string                  `json:"x-civnode-tokens"`
	RateLimited bool                       `json:"x-civnode-rate-limited"`
}

type openAPIDoc struct {
	OpenAPI  string                     `json:"openapi"`
	Security []map[string][]string      `json:"security"`
	Tags     []struct{ Name string }    `json:"tags"`
	Paths    map[string]json.RawMessage `json:"paths"`
	// ops are the operations by "METHOD /path", with the path item's
	// parameters in front of their own.
	ops        map[string]openAPIOperation
	Components struct {
		Parameters      map[string]openAPIParameter `json:"parameters"`
		SecuritySchemes map[string]json.RawMessage  `json:"securitySchemes"`
	} `json:"components"`
}

var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func parseOpenAPI(t *testing.T, b []byte) *openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	d.ops = make(map[string]openAPIOperation)
	for path, raw := range d.Paths {
		var item map[string]json.RawMessage
		if err := json.Unmarshal(raw, &item); err != nil {
			t.Fatalf("path %s: %v", path, err)
		}
		var shared []openAPIParameter
		if p, ok := item["parameters"]; ok {
			if err := json.Unmarshal(p, &shared); err != nil {
				t.Fatalf("path %s parameters: %v", path, err)
			}
		}
		for _, m := range openAPIMethods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", m, path, err)
			}
			op.Parameters = append(slices.Clone(shared), op.Parameters...)
			for i, p := range op.Parameters {
				if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
					def, found := d.Components.Parameters[name]
					if !found {
						t.Fatalf("%s %s: parameter %s is not defined", m, path, p.Ref)
					}
					op.Parameters[i] = def
				}
			}
			d.ops[strings.ToUpper(m)+" "+path] = op
		}
	}
	return &d
}

// TestOpenAPIDocumentsEveryRoute holds the document to the route table both
// ways: every registered route is an operation of the document, and every
// operation is a registered route or an alias that a route answers. It also
// holds what a route table cannot show by itself: path templates and their
// parameters agree, operation ids are unique, and the rate limit is marked
// on exactly the routes it covers.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	n := newWiredNode(t, "")
	s := n.srv
	d := parseOpenAPI(t, openAPIDocument)
	if d.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", d.OpenAPI)
	}
	routes := documentedRoutes(s)
	for _, r := range routes {
		if _, ok := d.ops[r]; !ok {
			t.Errorf("route %s is not in http/openapi.json", r)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(d.ops)) {
		if _, alias := routeAliases[op]; !alias && !slices.Contains(routes, op) {
			t.Errorf("http/openapi.json documents %s, which the server does not register", op)
		}
	}
	for op := range routeAliases {
		if _, ok := d.ops[op]; !ok {
			t.Errorf("alias %s is not in http/openapi.json", op)
		}
	}
	checkAliases(t, s, routes)

	tags := make(map[string]bool)
	for _, tag := range d.Tags {
		tags[tag.Name] = true
	}
	ids := make(map[string]string)
	template := regexp.MustCompile(`\{([^}]+)\}`)
	limited := documentedLimited(s)
	for key, op := range d.ops {
		if other, dup := ids[op.OperationID]; dup || op.OperationID == "" {
			t.Errorf("%s: operationId %q is empty or also %s's", key, op.OperationID, other)
		}
		ids[op.OperationID] = key
		if len(op.Tags) == 0 {
			t.Errorf("%s has no tag", key)
		}
		for _, tag := range op.Tags {
			if !tags[tag] {
				t.Errorf("%s: tag %q is not declared", key, tag)
			}
		}
		var inPath []string
		for _, p := range op.Parameters {
			if p.In == "path" {
				inPath = append(inPath, p.Name)
				if !p.Required {
					t.Errorf("%s: path parameter %s is not required", key, p.Name)
				}
			}
		}
		_, path, _ := strings.Cut(key, " ")
		var inTemplate []string
		for _, m := range template.FindAllStringSubmatch(path, -1) {
			inTemplate = append(inTemplate, m[1])
		}
		slices.Sort(inPath)
		slices.Sort(inTemplate)
		if !slices.Equal(inPath, inTemplate) {
			t.Errorf("%s: path parameters %v, template %v", key, inPath, inTemplate)
		}
		if op.Tokens == nil {
			t.Errorf("%s has no x-civnode-tokens", key)
		} else if public := op.Security != nil && len(*op.Security) == 0; public != (len(*op.Tokens) == 0) {
			t.Errorf("%s: security %v but x-civnode-tokens %v", key, op.Security, *op.Tokens)
		}
		if strings.HasPrefix(key, "POST ") && op.RequestBody == nil {
			t.Errorf("%s has no requestBody", key)
		}
		ok := false
		for status := range op.Responses {
			ok = ok || status[0] == '2' || slices.Contains([]string{"101", "301", "302", "307", "308"}, status)
		}
		if !ok {
			t.Errorf("%s documents no success response", key)
		}
		if public := op.Tokens != nil && len(*op.Tokens) == 0; !public && op.Responses["401"] == nil {
			t.Errorf("%s needs a token but documents no 401", key)
		}
		if op.RateLimited != slices.Contains(limited, key) {
			t.Errorf("%s: x-civnode-rate-limited is %v, but the server rate-limits it: %v", key, op.RateLimited, !op.RateLimited)
		}
	}
}

// documentedLimited is the server's rate-limited routes as the document
// writes them.
func documentedLimited(s *Server) []string {
	out := make([]string, 0, len(s.limitedRoutes))
	for _, r := range s.limitedRoutes {
		out = append(out, routeParam.ReplaceAllString(r, "{$1}"))
	}
	return out
}

// kindRefusals are the messages with which requireAuth refuses a token of a
// kind a route does not admit: whatever admitKind answers, for any flags.
func kindRefusals() []string {
	var out []string
	for f := range 1 << 16 {
		for _, kind := range []commands.ActorKind{commands.ActorOwner, commands.ActorAgent, commands.ActorObserver} {
			var ce *commands.Error
			if err := admitKind(commands.Actor{Kind: kind}, routeFlags(f)); errors.As(err, &ce) && !slices.Contains(out, ce.Message) {
				out = append(out, ce.Message)
			}
		}
	}
	return out
}

// TestOpenAPITokenKinds sends every documented operation a request with each
// kind of token, with none, and with the token in the query, and checks that
// exactly the kinds x-civnode-tokens lists get past authentication, and that
// only the operations whose security offers queryToken take ?token=. Bodies
// are [] so that no command runs: authentication is decided before a body is
// read.
func TestOpenAPITokenKinds(t *testing.T) {
	n := newWiredNode(t, "")
	d := parseOpenAPI(t, openAPIDocument)
	routes := documentedRoutes(n.srv)
	tokens := map[string]string{"owner": testToken, "agent": n.agentToken, "observer": n.observerToken}
	fill := regexp.MustCompile(`\{[^}]+\}`)
	refusals := kindRefusals()
	if len(refusals) < 2 {
		t.Fatalf("admitKind refuses with %q: the probe could not tell a refused kind", refusals)
	}
	// The probe fails authentication on purpose, twice per operation: more than
	// the per-address allowance, which would answer 429 before authenticating.
	n.srv.authFails = newKeyedLimiters(authFailRate, 1<<20, maxLimiterKeys)
	for _, key := range slices.Sorted(maps.Keys(d.ops)) {
		op := d.ops[key]
		if op.Tokens == nil || (!slices.Contains(routes, key) && routeAliases[key] == routeAlias{}) {
			continue // reported by TestOpenAPIDocumentsEveryRoute
		}
		method, path, _ := strings.Cut(key, " ")
		path = fill.ReplaceAllString(path, "x")
		admitted := func(token, query string) (bool, response) {
			var body *strings.Reader
			if method == http.MethodPost {
				body = strings.NewReader("[]")
			} else {
				body = strings.NewReader("")
			}
			r := n.request(method, path+query, token, body, "Content-Type", "application/json")
			if r.status == http.StatusTooManyRequests {
				t.Fatalf("%s: %s: the probe was rate-limited and proves nothing", key, r.body)
			}
			if r.status == http.StatusUnauthorized {
				return false, r
			}
			if r.status == http.StatusForbidden {
				var e errorBody
				if err := json.Unmarshal(r.body, &e); err == nil && slices.Contains(refusals, e.Error) {
					return false, r
				}
			}
			return true, r
		}
		public := len(*op.Tokens) == 0
		for _, kind := range []string{"owner", "agent", "observer"} {
			want := public || slices.Contains(*op.Tokens, kind)
			if got, r := admitted(tokens[kind], ""); got != want {
				t.Errorf("%s with an %s token: admitted %v, documented %v (%d %.200s)", key, kind, got, want, r.status, r.body)
			}
		}
		if got, r := admitted("", ""); got != public {
			t.Errorf("%s without a token: admitted %v, documented public %v (%d %.200s)", key, got, public, r.status, r.body)
		}
		wantQuery := public
		if op.Security != nil {
			for _, req := range *op.Security {
				_, q := req["queryToken"]
				wantQuery = wantQuery || q
			}
		}
		if got, r := admitted("", "?token="+testToken); got != wantQuery {
			t.Errorf("%s with ?token=: admitted %v, documented %v (%d %.200s)", key, got, wantQuery, r.status, r.body)
		}
	}
}

// TestOpenAPIServed checks that GET /v1/openapi.json answers the embedded
// document byte for byte to every kind of token and without one, and that a
// client holding it may revalidate.
func TestOpenAPIServed(t *testing.T) {
	n := newWiredNode(t, "")
	if len(openAPIDocument) < 1000 || !json.Valid(openAPIDocument) {
		t.Fatalf("the embedded document is %d bytes of valid JSON %v", len(openAPIDocument), json.Valid(openAPIDocument))
	}
	var etag string
	for kind, token := range map[string]string{"owner": testToken, "observer": n.observerToken, "agent": n.agentToken, "no token": ""} {
		r := n.request(http.MethodGet, "/v1/openapi.json", token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("%s: status %d, body %s", kind, r.status, r.body)
		}
		if !bytes.Equal(r.body, openAPIDocument) {
			t.Errorf("%s: the body (%d bytes) is not the embedded document (%d bytes)", kind, len(r.body), len(openAPIDocument))
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", kind, ct)
		}
		etag = r.header.Get("ETag")
	}
	if etag != openAPIETag || !strings.HasPrefix(etag, `"`) {
		t.Errorf("ETag %q, want %q", etag, openAPIETag)
	}

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		r := n.request(http.MethodGet, "/v1/openapi.json", testToken, nil, "If-None-Match", inm)
		if r.status != http.StatusNotModified || len(r.body) != 0 || r.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d, ETag %q, %d bytes; want 304 with the ETag and no body", inm, r.status, r.header.Get("ETag"), len(r.body))
		}
	}
	if r := n.request(http.MethodGet, "/v1/openapi.json", testToken, nil, "If-None-Match", `"other"`); r.status != http.StatusOK || !bytes.Equal(r.body, openAPIDocument) {
		t.Errorf(`If-None-Match "other": %d, %d bytes; want the document`, r.status, len(r.body))
	}
	if r := n.request(http.MethodGet, "/v1/openapi.json", "", nil, "If-None-Match", etag); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match without a token: %d, want 304: the document needs no token", r.status)
	}
}

// TestOpenAPIValidates has a validator this project did not write check the
// document the server serves against the official OpenAPI 3.1 schema, and
// every Schema Object in it as strict JSON Schema 2020-12
// (testdata/openapi-validate/validate.mjs); then checks that the same
// validator refuses broken copies, so a pass means something. It needs node
// and the validator's node_modules (npm ci --prefix
// http/testdata/openapi-validate); without them it is skipped, except in CI
// (CI=true), where it fails.
func TestOpenAPIValidates(t *testing.T) {
	node := needNode(t)
	if _, err := os.Stat(filepath.Join(openAPIValidateDir, "node_modules", "@seriousme", "openapi-schema-validator", "package.json")); err != nil {
		testtool.Missing(t, "the OpenAPI validator is not installed: run `npm ci --prefix http/testdata/openapi-validate`")
	}
	n := newWiredNode(t, "")
	r := n.get("/v1/openapi.json")
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", r.status, r.body)
	}
	dir := t.TempDir()
	validate := func(name string, doc []byte) (stdout, stderr string, err error) {
		t.Helper()
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "validate.mjs", file)
		cmd.Dir = openAPIValidateDir
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("node validate.mjs %s: %v", name, ctx.Err())
		}
		return out.String(), errOut.String(), err
	}

	out, errOut, err := validate("served.json", r.body)
	if err != nil {
		t.Fatalf("the served document is not valid: %v\n%s%s", err, errOut, out)
	}
	if !strings.HasPrefix(out, "valid: OpenAPI 3.1.0,") {
		t.Errorf("validator said %q", out)
	}
	t.Logf("%s", strings.TrimSpace(out))

	for _, broken := range []struct {
		name, stage string
		edit        func(doc map[string]any)
	}{
		{"responses-not-an-object", "openapi-schema", func(doc map[string]any) {
			member(doc, "paths", "/v1/health", "get")["responses"] = "ok"
		}},
		{"unknown-operation-member", "openapi-schema", func(doc map[string]any) {
			member(doc, "paths", "/v1/state", "get")["summry"] = "State"
		}},
		{"dangling-ref", "openapi-schema", func(doc map[string]any) {
			member(doc, "paths", "/v1/events", "get", "responses", "200", "content", "application/json")["schema"] =
				map[string]any{"$ref": "#/components/schemas/NoSuchSchema"}
		}},
		{"misspelt-schema-keyword", "json-schema", func(doc map[string]any) {
			member(doc, "components", "schemas", "Event")["requried"] = []any{"id"}
		}},
	} {
		var doc map[string]any
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		broken.edit(doc)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, err := validate(broken.name+".json", b)
		if err == nil {
			t.Errorf("%s: the validator accepted a broken document: %s", broken.name, out)
			continue
		}
		if !strings.Contains(errOut, `"stage": "`+broken.stage+`"`) {
			t.Errorf("%s: refused (%v) by the wrong check, want %s:\n%s", broken.name, err, broken.stage, errOut)
		}
	}
}

// member walks doc through nested objects by key.
func member(doc map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		doc = doc[k].(map[string]any)
	}
	return doc
}

// TestOpenAPIResponsesMatchDocument drives a node through every area of the
// API, successes and refusals, and checks each answer against the document:
// its status is one the operation lists, its Content-Type one the response
// lists, and a JSON body validates against the response's schema (formats
// asserted). So the schemas describe what the node sends, not what it was
// meant to.
func TestOpenAPIResponsesMatchDocument(t *testing.T) {
	reg := newFakeRegistry(t)
	n := newWiredNode(t, reg.URL)
	d := parseOpenAPI(t, openAPIDocument)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIDocument))
	if err != nil {
		t.Fatal(err)
	}
	const base = "civnode:openapi.json"
	if err := c.AddResource(base, doc); err != nil {
		t.Fatal(err)
	}
	schemas := make(map[string]*jsonschema.Schema)
	pointer := func(parts ...string) string {
		for i, p := range parts {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
		}
		return "#/" + strings.Join(parts, "/")
	}
	walkAPI(t, n, func(op, _ string, r response) {
		t.Helper()
		checkAgainstDocument(t, d, c, schemas, base, pointer, op, r)
	})
}

// walkAPI drives n, whose registry proxy calls a fakeRegistry, through every
// area of the API, successes and refusals, and hands each answer to visit
// with the document's "METHOD /path" of its operation and the request as
// sent. Each step must get the status it is written for, so that it
// exercises what it means to.
func walkAPI(t *testing.T, n *wiredNode, visit func(op, request string, r response)) {
	t.Helper()
	type step struct {
		op     string // the document's "METHOD /path"
		path   string // as sent, with its query
		token  string
		body   string
		status int // the status this step must get, so that each exercises what it means to
		keep   func(body []byte)
	}
	var (
		adaDID, missionID, tokenID, treeSize string
		nonce                                = strings.Repeat("ab", 32)
	)
	steps := []step{
		{op: "GET /v1/health", path: "/v1/health", status: 200},
		{op: "GET /v1/ready", path: "/v1/ready", status: 200},
		{op: "GET /v1/state", path: "/v1/state", token: testToken, status: 200},
		{op: "GET /v1/state", path: "/v1/state", status: 401},
		{op: "GET /v1/state", path: "/v1/state", token: n.observerToken, status: 403},
		{op: "POST /v1/node/proof", path: "/v1/node/proof", body: `{"nonce":"` + nonce + `"}`, status: 200},
		{op: "POST /v1/node/proof", path: "/v1/node/proof", body: `{"nonce":"abc"}`, status: 400},
		{op: "GET /v1/client/network/status", path: "/v1/client/network/status", token: testToken, status: 200},
		{op: "GET /v1/civilization/public-identity", path: "/v1/civilization/public-identity?public_id=ada", token: testToken, status: 200,
			keep: func(b []byte) { adaDID = jsonField(t, b, "agent_did") }},
		{op: "POST /v1/civilization/bootstrap-identity", path: "/v1/civilization/bootstrap-identity", token: testToken,
			body: `{"display_name":"Grace Hopper","faction":"frontier","home_subnet_id":"genesis","home_zone_id":"north-dock"}`, status: 200},
		{op: "POST /v1/civilization/bootstrap-identity", path: "/v1/civilization/bootstrap-identity", token: testToken,
			body: `{"display_name":"Ada","public_id":"ada"}`, status: 409},
		{op: "GET /v1/civilization/controller-binding", path: "/v1/civilization/controller-binding?public_id=ada", token: testToken, status: 404},
	}
	run := func(st step) {
		t.Helper()
		method, _, _ := strings.Cut(st.op, " ")
		var body *strings.Reader
		if st.body != "" {
			body = strings.NewReader(st.body)
		} else {
			body = strings.NewReader("")
		}
		headers := []string{"Content-Type", "application/json"}
		if st.op == "POST /mcp" {
			headers = append(headers, "Accept", "application/json, text/event-stream")
		}
		r := sendNoRedirect(t, n.url, method, st.path, st.token, body, headers...)
		if r.status != st.status {
			t.Fatalf("%s %s: %d %.300s, want %d", method, st.path, r.status, r.body, st.status)
		}
		visit(st.op, method+" "+st.path, r)
		if st.keep != nil {
			st.keep(r.body)
		}
	}
	for _, st := range steps {
		run(st)
	}
	ada := func() string { return adaDID }
	more := []func() step{
		func() step {
			return step{op: "POST /v1/civilization/public-identity", path: "/v1/civilization/public-identity", token: testToken, status: 200,
				body: `{"agent_did":"` + ada() + `","display_name":"Ada Lovelace","model_provider":"ollama/llama3","capabilities_granted":["missions.claim"],"wallet_adapter":"x402-evm","subnet_memberships":["genesis"]}`}
		},
		func() step {
			return step{op: "POST /v1/civilization/controller-binding", path: "/v1/civilization/controller-binding", token: testToken, status: 200,
				body: `{"agent_did":"` + ada() + `","controller_kind":"local_model","controller_ref":"ollama@ws-1"}`}
		},
		func() step {
			return step{op: "POST /v1/civilization/profile", path: "/v1/civilization/profile", token: testToken, status: 200,
				body: `{"agent_did":"` + ada() + `","faction":"order","role":"enforcer","strategy":"balanced","home_subnet_id":"genesis","home_zone_id":"north-dock"}`}
		},
		func() step {
			return step{op: "POST /v1/civilization/profile", path: "/v1/civilization/profile", token: testToken, status: 400,
				body: `{"agent_did":"` + ada() + `","faction":"pirates"}`}
		},
		func() step {
			return step{op: "GET /v1/civilization/controller-binding", path: "/v1/civilization/controller-binding?agent_did=" + ada(), token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/civilization/profile", path: "/v1/civilization/profile?public_id=ada", token: n.agentToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/civilization/identities", path: "/v1/civilization/identities?limit=1", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/civilization/identities", path: "/v1/civilization/identities?cursor=bogus", token: testToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/game/catalog", path: "/v1/game/catalog", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/game/status", path: "/v1/game/status", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/game/bootstrap", path: "/v1/game/bootstrap", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/game/starter-missions", path: "/v1/game/starter-missions", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/game/mission-pack", path: "/v1/game/mission-pack", token: testToken, status: 200}
		},
		func() step {
			return step{op: "POST /v1/game/starter-missions/bootstrap", path: "/v1/game/starter-missions/bootstrap", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/game/mission-pack/bootstrap", path: "/v1/game/mission-pack/bootstrap", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/game/mission-pack/bootstrap", path: "/v1/game/mission-pack/bootstrap", token: n.agentToken, body: `{}`, status: 403}
		},
		func() step {
			return step{op: "GET /v1/game/status", path: "/v1/game/status", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/game/starter-missions", path: "/v1/game/starter-missions", token: testToken, status: 200}
		},
		func() step {
			return step{op: "POST /v1/core/missions", path: "/v1/core/missions", token: testToken, status: 200,
				body: `{"title":"Escort the ore convoy","description":"From the north dock to the refinery.","publisher":"genesis","publisher_kind":"planetary_government","domain":"security","subnet_id":"genesis","zone_id":"north-dock","required_role":"enforcer","required_faction":"order","reward":{"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5},"payload":{"escorts":2}}`,
				keep: func(b []byte) { missionID = jsonField(t, b, "mission_id") }}
		},
		func() step {
			return step{op: "POST /v1/core/missions", path: "/v1/core/missions", token: testToken, status: 400,
				body: `{"title":"x","description":"y","publisher":"genesis","publisher_kind":"planetary_government","domain":"security","subnet_id":"genesis","reward":{"agent_credits":5}}`}
		},
		func() step {
			return step{op: "POST /v1/core/missions/{mission_id}/claim", path: "/v1/core/missions/" + missionID + "/claim", token: n.agentToken, body: `{"claimer":"ada"}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/core/missions/{mission_id}/claim", path: "/v1/core/missions/" + missionID + "/claim", token: n.agentToken, body: `{"claimer":"ada"}`, status: 409}
		},
		func() step {
			return step{op: "POST /v1/core/missions/{mission_id}/settle", path: "/v1/core/missions/" + missionID + "/settle", token: testToken, body: `{}`, status: 409}
		},
		func() step {
			return step{op: "POST /v1/core/missions/{mission_id}/complete", path: "/v1/core/missions/" + missionID + "/complete", token: n.agentToken, body: `{"result":"delivered"}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/core/missions/{mission_id}/settle", path: "/v1/core/missions/" + missionID + "/settle", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "GET /v1/core/missions/{mission_id}", path: "/v1/core/missions/" + missionID, token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/core/missions/{mission_id}", path: "/v1/core/missions/01a200a0-0000-7000-8000-000000000000", token: testToken, status: 404}
		},
		func() step {
			return step{op: "GET /v1/state/proof", path: "/v1/state/proof?key=mission%2F" + missionID, token: testToken, status: 503}
		},
		func() step {
			return step{op: "GET /v1/state/proof", path: "/v1/state/proof?key=missions%2F" + missionID, token: testToken, status: 400}
		},
		func() step {
			commitState(t, n.log) // what the node's state committer does a second after a change
			return step{op: "GET /v1/state/proof", path: "/v1/state/proof?key=mission%2F" + missionID, token: n.agentToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/state/proof", path: "/v1/state/proof?key=identity%2F" + ada(), token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/state/proof", path: "/v1/state/proof?key=mission%2F01a200a0-0000-7000-8000-000000000000", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/core/missions", path: "/v1/core/missions?state=created&limit=2", token: n.agentToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/core/missions", path: "/v1/core/missions?state=open", token: testToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/core/missions/my", path: "/v1/core/missions/my?public_id=ada", token: n.agentToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/supervision/missions", path: "/v1/supervision/missions?state=settled", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/supervision/identities", path: "/v1/supervision/identities", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/supervision/home", path: "/v1/supervision/home?public_id=ada", token: n.agentToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/supervision/home", path: "/v1/supervision/home?public_id=grace-hopper", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/supervision/briefing", path: "/v1/supervision/briefing?hours=1", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/civilization/briefing", path: "/v1/civilization/briefing", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/civilization/briefing", path: "/v1/civilization/briefing?hours=721", token: testToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/civilization/metrics", path: "/v1/civilization/metrics", token: testToken, status: 200}
		},
		func() step {
			return step{op: "POST /v1/admin/tokens", path: "/v1/admin/tokens", token: testToken, body: `{"kind":"agent","acts_for":"grace-hopper"}`, status: 200,
				keep: func(b []byte) { tokenID = jsonField(t, b, "token_id") }}
		},
		func() step {
			return step{op: "POST /v1/admin/tokens", path: "/v1/admin/tokens", token: testToken, body: `{"kind":"agent","acts_for":"bob"}`, status: 404}
		},
		func() step {
			return step{op: "POST /v1/admin/tokens/{token_id}/rotate", path: "/v1/admin/tokens/" + tokenID + "/rotate", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/admin/tokens/{token_id}/revoke", path: "/v1/admin/tokens/" + tokenID + "/revoke", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/admin/tokens/{token_id}/rotate", path: "/v1/admin/tokens/" + tokenID + "/rotate", token: testToken, body: `{}`, status: 409}
		},
		func() step {
			return step{op: "GET /v1/admin/tokens", path: "/v1/admin/tokens", token: testToken, status: 200}
		},
		func() step {
			return step{op: "POST /v1/admin/backup", path: "/v1/admin/backup", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/admin/backup", path: "/v1/admin/backup", token: testToken, body: `{"dir":"/tmp"}`, status: 400}
		},
		func() step {
			return step{op: "POST /v1/admin/payment-accounts", path: "/v1/admin/payment-accounts", token: testToken, body: `{"ref":"ops","max_per_payment":"50000"}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/admin/payment-accounts", path: "/v1/admin/payment-accounts", token: testToken, body: `{"ref":"ops"}`, status: 409}
		},
		func() step {
			return step{op: "GET /v1/admin/payment-accounts", path: "/v1/admin/payment-accounts", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/core/servicenet/agents/{agent_id}", path: "/v1/core/servicenet/agents/echo", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/core/servicenet/agents/{agent_id}", path: "/v1/core/servicenet/agents/nobody", token: testToken, status: 404}
		},
		func() step {
			return step{op: "POST /v1/core/servicenet/agents/{agent_id}/invoke", path: "/v1/core/servicenet/agents/echo/invoke", token: testToken, body: `{"message":"hello"}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/core/servicenet/agents/{agent_id}/invoke", path: "/v1/core/servicenet/agents/slow/invoke", token: n.agentToken, body: `{"message":"take your time","input":{"text":"x"}}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/core/servicenet/agents/{agent_id}/invoke", path: "/v1/core/servicenet/agents/echo/invoke", token: testToken, body: `{"message":"x","input":{"text":1}}`, status: 400}
		},
		func() step {
			return step{op: "POST /v1/core/servicenet/agents/{agent_id}/tasks/{task_id}/get", path: "/v1/core/servicenet/agents/slow/tasks/slow-task-1/get", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "POST /v1/core/servicenet/agents/{agent_id}/tasks/{task_id}/get", path: "/v1/core/servicenet/agents/slow/tasks/slow-task-1/get", token: testToken, body: `{}`, status: 200}
		},
		func() step {
			return step{op: "GET /v1/events", path: "/v1/events?limit=3&type=mission.*", token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/events", path: "/v1/events?limit=0", token: testToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/events/export", path: "/v1/events/export", token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/audit", path: "/v1/audit?action=token.*", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/stream", path: "/v1/stream", token: testToken, status: 426}
		},
		func() step {
			return step{op: "GET /v1/transparency", path: "/v1/transparency", token: n.observerToken, status: 200,
				keep: func(b []byte) {
					var head struct {
						TreeSize int64 `json:"tree_size"`
					}
					if err := json.Unmarshal(b, &head); err != nil || head.TreeSize < 2 || head.TreeSize >= 256 {
						t.Fatalf("tree head %s (%v): want 2..255 events, so that one partial tile holds them", b, err)
					}
					treeSize = strconv.FormatInt(head.TreeSize, 10)
				}}
		},
		func() step {
			return step{op: "GET /v1/transparency", path: "/v1/transparency", token: n.agentToken, status: 403}
		},
		func() step {
			return step{op: "GET /v1/transparency/checkpoint", path: "/v1/transparency/checkpoint", token: testToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/transparency/proof/inclusion", path: "/v1/transparency/proof/inclusion?seq=1&tree_size=" + treeSize, token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/transparency/proof/inclusion", path: "/v1/transparency/proof/inclusion?seq=0", token: n.observerToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/transparency/proof/consistency", path: "/v1/transparency/proof/consistency?from=1&to=" + treeSize, token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/transparency/proof/consistency", path: "/v1/transparency/proof/consistency?from=1&to=2&tree-size=3", token: n.observerToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/transparency/tile/{tile}", path: "/v1/transparency/tile/0/000.p/" + treeSize, token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/transparency/tile/{tile}", path: "/v1/transparency/tile/0/000", token: n.observerToken, status: 404}
		},
		func() step {
			return step{op: "GET /v1/transparency/checkpoint", path: "/v1/transparency/checkpoint?witnessed=1", token: n.observerToken, status: 404}
		},
		func() step {
			return step{op: "GET /v1/transparency/checkpoint", path: "/v1/transparency/checkpoint?witnessed=2", token: n.observerToken, status: 400}
		},
		func() step {
			return step{op: "GET /v1/witness", path: "/v1/witness", token: n.observerToken, status: 200}
		},
		func() step { return step{op: "GET /v1/witness", path: "/v1/witness", token: n.agentToken, status: 403} },
		func() step {
			return step{op: "POST /v1/witness/add-checkpoint", path: "/v1/witness/add-checkpoint", body: "old 0\n\n" + n.checkpoint(), status: 200}
		},
		func() step {
			// The witness holds the tree now: old 0 is a conflict naming its size.
			return step{op: "POST /v1/witness/add-checkpoint", path: "/v1/witness/add-checkpoint", body: "old 0\n\n" + n.checkpoint(), status: 409}
		},
		func() step {
			return step{op: "POST /v1/witness/add-checkpoint", path: "/v1/witness/add-checkpoint", body: "not a request", status: 400}
		},
		func() step {
			return step{op: "GET /v1/witness", path: "/v1/witness", token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "POST /mcp", path: "/mcp", token: n.observerToken, status: 200,
				body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_events","arguments":{"limit":1}}}`}
		},
		func() step {
			return step{op: "POST /mcp", path: "/mcp", token: testToken, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202}
		},
		func() step {
			return step{op: "GET /v1/metrics", path: "/v1/metrics", token: n.observerToken, status: 200}
		},
		func() step {
			return step{op: "GET /v1/openapi.json", path: "/v1/openapi.json", token: n.agentToken, status: 200}
		},
		func() step { return step{op: "GET /v1/console", path: "/v1/console", status: 301} },
		func() step { return step{op: "GET /v1/console/", path: "/v1/console/", status: 200} },
		func() step { return step{op: "GET /v1/console/{file}", path: "/v1/console/index.html", status: 200} },
		func() step { return step{op: "GET /v1/console/{file}", path: "/v1/console/nope.js", status: 404} },
	}
	for _, next := range more {
		run(next())
	}
	for _, name := range []string{"console.js", "icon.svg"} {
		if _, ok := consoleFiles[name]; ok {
			run(step{op: "GET /v1/console/{file}", path: "/v1/console/" + name, status: 200})
		}
	}
}

// sendNoRedirect is testNode.request without following redirects, so that a
// 301 is seen as sent.
func sendNoRedirect(t *testing.T, base, method, path, token string, body io.Reader, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// checkAgainstDocument checks one answer against the operation op of the
// document: status, Content-Type and, for JSON, the body's schema.
func checkAgainstDocument(t *testing.T, d *openAPIDoc, c *jsonschema.Compiler, schemas map[string]*jsonschema.Schema,
	base string, pointer func(...string) string, op string, r response) {
	t.Helper()
	o, ok := d.ops[op]
	if !ok {
		t.Fatalf("%s is not in the document", op)
	}
	status := strconv.Itoa(r.status)
	raw, ok := o.Responses[status]
	if !ok {
		t.Errorf("%s answered %d, which the document does not list (%.200s)", op, r.status, r.body)
		return
	}
	method, path, _ := strings.Cut(op, " ")
	at := []string{"paths", path, strings.ToLower(method), "responses", status}
	var resp struct {
		Ref     string                     `json:"$ref"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	if name, ok := strings.CutPrefix(resp.Ref, "#/components/responses/"); ok {
		at = []string{"components", "responses", name}
		if err := json.Unmarshal(d.responses(t)[name], &resp); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.body) == 0 && len(resp.Content) == 0 {
		return
	}
	ct := r.header.Get("Content-Type")
	if _, ok := resp.Content[ct]; !ok {
		t.Errorf("%s %d: Content-Type %q, documented %v", op, r.status, ct, slices.Sorted(maps.Keys(resp.Content)))
		return
	}
	if ct != "application/json" {
		return
	}
	loc := base + pointer(append(at, "content", ct, "schema")...)
	sch, ok := schemas[loc]
	if !ok {
		var err error
		if sch, err = c.Compile(loc); err != nil {
			t.Fatalf("compile %s: %v", loc, err)
		}
		schemas[loc] = sch
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("%s %d: %v", op, r.status, err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s %d: the body does not match the document: %v\nbody: %.500s", op, r.status, err, r.body)
	}
}

// responses returns the document's components.responses, raw.
func (d *openAPIDoc) responses(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	var doc struct {
		Components struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Responses
}

// jsonField returns the string member name of a JSON object.
func jsonField(t *testing.T, body []byte, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	s, ok := m[name].(string)
	if !ok {
		t.Fatalf("%s is not a string in %s", name, body)
	}
	return s
}
