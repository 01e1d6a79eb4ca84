package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
)

var (
	// openAPICodegenGoDir is a Go module of its own (so that oapi-codegen is
	// no dependency of ours) that pins oapi-codegen as a tool and holds the
	// program that decodes answers into the types it generates.
	openAPICodegenGoDir = filepath.Join("testdata", "openapi-codegen-go")
	// openAPITypeScriptDir pins openapi-typescript and tsc.
	openAPITypeScriptDir = filepath.Join("testdata", "openapi-typescript")
)

// capturedAnswer is one JSON answer of a running node, named by the
// document's operationId, as the generator checks read it.
type capturedAnswer struct {
	Operation string          `json:"operation"`
	Request   string          `json:"request"` // "METHOD /path?query", for messages
	Status    int             `json:"status"`
	Body      json.RawMessage `json:"body"`
}

// captureAnswers walks a wired node through every area of the API (walkAPI)
// and returns the document it serves, read without a token as a generator
// would read it, and every JSON answer of the walk.
func captureAnswers(t *testing.T) ([]byte, []capturedAnswer) {
	t.Helper()
	reg := newFakeRegistry(t)
	n := newWiredNode(t, reg.URL)
	served := n.request(http.MethodGet, "/v1/openapi.json", "", nil)
	if served.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json without a token: %d %s", served.status, served.body)
	}
	d := parseOpenAPI(t, served.body)
	var answers []capturedAnswer
	walkAPI(t, n, func(op, request string, r response) {
		if r.header.Get("Content-Type") != "application/json" || len(r.body) == 0 {
			return
		}
		answers = append(answers, capturedAnswer{Operation: d.ops[op].OperationID, Request: request, Status: r.status, Body: r.body})
	})
	if len(answers) < 50 {
		t.Fatalf("the walk gave %d JSON answers: too few to prove anything", len(answers))
	}
	return served.body, answers
}

// runGenerator runs name with args in dir, with env added to this process's, and
// returns its standard output and standard error.
func runGenerator(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), ctx.Err())
	}
	return out.String(), errOut.String(), err
}

// copyFiles copies the named files of src into dst.
func copyFiles(t *testing.T, src, dst string, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// withUnknownMember returns answers with a copy of the first answer of op
// and status whose body has one member more than the node sends.
func withUnknownMember(t *testing.T, answers []capturedAnswer, op string, status int) []capturedAnswer {
	t.Helper()
	for _, a := range answers {
		if a.Operation == op && a.Status == status {
			var body map[string]any
			if err := json.Unmarshal(a.Body, &body); err != nil {
				t.Fatal(err)
			}
			body["not_in_the_document"] = true
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			a.Body = b
			return append(answers[:len(answers):len(answers)], a)
		}
	}
	t.Fatalf("the walk has no %s %d answer", op, status)
	return nil
}

// TestOpenAPIGoClient generates a Go client and its types from the document
// a node serves with oapi-codegen v2.8.2 (pinned as a tool of the scratch
// module testdata/openapi-codegen-go), builds them, and decodes every JSON
// answer of a walk through the API into the generated type of its operation
// and status, unknown fields refused; then checks that an answer with a
// member the document does not declare is refused, so a pass means
// something. It needs the Go module proxy (or a module cache that holds
// oapi-codegen); without it it is skipped, except in CI (CI=true), where it
// fails.
func TestOpenAPIGoClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds oapi-codegen and the client it generates; the full suite runs it")
	}
	goTool := testtool.Need(t, "go", "install Go")
	dir := t.TempDir()
	copyFiles(t, openAPICodegenGoDir, dir, "go.mod", "go.sum", "oapi-codegen.yaml", "main.go")
	env := []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}
	if _, errOut, err := runGenerator(t, dir, env, goTool, "mod", "download"); err != nil {
		testtool.Missing(t, "oapi-codegen's module cannot be downloaded (set GOPROXY to a reachable Go module proxy): "+errOut)
	}

	doc, answers := captureAnswers(t)
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runGenerator(t, dir, env, goTool, "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "openapi.json"); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s%s", err, errOut, out)
	}
	if out, errOut, err := runGenerator(t, dir, env, goTool, "build", "-o", "decode", "."); err != nil {
		t.Fatalf("go build of the generated client: %v\n%s%s", err, errOut, out)
	}
	decode := func(name string, answers []capturedAnswer) (stdout, stderr string, err error) {
		t.Helper()
		b, err := json.Marshal(answers)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return runGenerator(t, dir, nil, filepath.Join(dir, "decode"), name)
	}

	out, errOut, err := decode("answers.json", answers)
	if err != nil {
		t.Fatalf("answers do not decode into the generated types: %v\n%s", err, errOut)
	}
	if want := fmt.Sprintf("decoded %d answers ", len(answers)); !strings.HasPrefix(out, want) {
		t.Errorf("decode said %q, want %q…", out, want)
	}
	t.Logf("%s", strings.TrimSpace(out))

	_, errOut, err = decode("broken.json", withUnknownMember(t, answers, "getState", http.StatusOK))
	if err == nil || !strings.Contains(errOut, `unknown field "not_in_the_document"`) {
		t.Errorf("an answer with an undeclared member: %v, %q; want it refused", err, errOut)
	}
}

// TestOpenAPITypeScriptTypes generates TypeScript types from the document a
// node serves with openapi-typescript, and type-checks with tsc --strict a
// file that assigns every JSON answer of a walk through the API, as an
// object literal, to the generated type of its operation and status
// (testdata/openapi-typescript/answer.ts); then checks that tsc refuses an
// answer with a member the document does not declare, so a pass means
// something. It needs node and the tools' node_modules (npm ci --prefix
// http/testdata/openapi-typescript); without them it is skipped, except in
// CI (CI=true), where it fails.
func TestOpenAPITypeScriptTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs openapi-typescript and tsc over every answer; the full suite runs it")
	}
	node := needNode(t)
	modules := filepath.Join(openAPITypeScriptDir, "node_modules")
	for _, pkg := range []string{"openapi-typescript", "typescript"} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			testtool.Missing(t, pkg+" is not installed: run `npm ci --prefix http/testdata/openapi-typescript`")
		}
	}
	modules, err := filepath.Abs(modules)
	if err != nil {
		t.Fatal(err)
	}
	doc, answers := captureAnswers(t)
	dir := t.TempDir()
	copyFiles(t, openAPITypeScriptDir, dir, "answer.ts")
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runGenerator(t, dir, nil, node, filepath.Join(modules, "openapi-typescript", "bin", "cli.js"),
		"openapi.json", "--output", "civnode.ts"); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s%s", err, errOut, out)
	}
	tsc := func(name string, answers []capturedAnswer) (string, error) {
		t.Helper()
		var src bytes.Buffer
		src.WriteString("// Answers of a running node, written by TestOpenAPITypeScriptTypes.\n")
		src.WriteString("import type { Answer } from \"./answer\";\n")
		for i, a := range answers {
			fmt.Fprintf(&src, "\n// %s\nexport const answer%d: Answer<%s, %d> = %s;\n", a.Request, i, strconv.Quote(a.Operation), a.Status, a.Body)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := runGenerator(t, dir, nil, node, filepath.Join(modules, "typescript", "bin", "tsc"),
			"--strict", "--exactOptionalPropertyTypes", "--noEmit", "--target", "es2022", "--module", "es2022",
			"--moduleResolution", "bundler", name)
		return out + errOut, err
	}

	if out, err := tsc("answers.ts", answers); err != nil {
		t.Fatalf("tsc --strict refuses answers of the node: %v\n%.20000s", err, out)
	}
	t.Logf("tsc --strict accepts %d answers", len(answers))

	broken := withUnknownMember(t, answers, "getState", http.StatusOK)
	out, err := tsc("broken.ts", broken[len(broken)-1:])
	if err == nil || !strings.Contains(out, "not_in_the_document") {
		t.Errorf("an answer with an undeclared member: %v, %q; want tsc to refuse it", err, out)
	}
}
