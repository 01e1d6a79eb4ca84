package events_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// typeConstants reads every exported Type* string constant of the package
// from its source, so that a constant added without a registry entry fails.
func typeConstants(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Type") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s is not a string literal", name.Name)
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[name.Name] = v
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Type constants found")
	}
	return out
}

// TestTypesListEveryConstant: the registry holds every Type* constant and the
// log's genesis, each once, with a description, and nothing else.
func TestTypesListEveryConstant(t *testing.T) {
	names := map[string]bool{}
	for _, ty := range events.Types() {
		if names[ty.Name] {
			t.Errorf("%s is listed twice", ty.Name)
		}
		names[ty.Name] = true
		if !eventlog.ValidType(ty.Name) {
			t.Errorf("%q is not a valid event type", ty.Name)
		}
		if ty.About == "" {
			t.Errorf("%s has no About", ty.Name)
		}
	}
	want := map[string]bool{eventlog.TypeGenesis: true}
	for name, v := range typeConstants(t) {
		want[v] = true
		if !names[v] {
			t.Errorf("%s (%q) is not in Types", name, v)
		}
	}
	for n := range names {
		if !want[n] {
			t.Errorf("Types lists %q, which no constant names", n)
		}
	}
}

// documented are the types docs/events.md documents under "Types in use",
// from its level-3 headings ("### `a`" or "### `a` and `b`").
func documented(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, inUse, ok := strings.Cut(string(b), "\n## Types in use\n")
	if !ok {
		t.Fatal(`docs/events.md has no "## Types in use" section`)
	}
	inUse, _, _ = strings.Cut(inUse, "\n## ")
	var out []string
	name := regexp.MustCompile("`([a-z0-9_.]+)`")
	for line := range strings.Lines(inUse) {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			for _, m := range name.FindAllStringSubmatch(h, -1) {
				if !slices.Contains(out, m[1]) {
					out = append(out, m[1])
				}
			}
		}
	}
	return out
}

// TestTypesAreDocumented: docs/events.md documents every type of the registry,
// and no other.
func TestTypesAreDocumented(t *testing.T) {
	docs := documented(t)
	var names []string
	for _, ty := range events.Types() {
		names = append(names, ty.Name)
		if !slices.Contains(docs, ty.Name) {
			t.Errorf("docs/events.md does not document %s", ty.Name)
		}
	}
	for _, d := range docs {
		if !slices.Contains(names, d) {
			t.Errorf("docs/events.md documents %s, which Types does not list", d)
		}
	}
}

// TestTypesReturnsACopy: a caller cannot change the registry.
func TestTypesReturnsACopy(t *testing.T) {
	ts := events.Types()
	ts[0].Name = "changed"
	if events.Types()[0].Name == "changed" {
		t.Error("Types returned the registry itself")
	}
}
