package http

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiDocsPath is the API reference, which must have a section per route.
var apiDocsPath = filepath.Join("..", "docs", "api.md")

// docsOperation matches a code span that names an operation, such as
// `GET /v1/core/missions/{mission_id}` or `GET /v1/events?since=&limit=&type=`.
var docsOperation = regexp.MustCompile("`(GET|HEAD|POST|PUT|PATCH|DELETE) (/[^`?\\s]*)[^`]*`")

// apiDocsHeadings returns the operations named in the level-3 headings of
// docs/api.md ("### `GET /v1/state`"), query strings cut off, with the line of
// each.
func apiDocsHeadings(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(apiDocsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops := make(map[string]int)
	sc := bufio.NewScanner(f)
	fence := false
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(text, "### ") {
			continue
		}
		for _, m := range docsOperation.FindAllStringSubmatch(text, -1) {
			op := m[1] + " " + m[2]
			if first, dup := ops[op]; dup {
				t.Errorf("docs/api.md:%d: %s has a heading already at line %d", line, op, first)
			}
			ops[op] = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestAPIDocsCoverEveryRoute checks that docs/api.md has a "### `METHOD
// /path`" section for every route a fully wired server registers, path
// parameters written {name}, and for every alias a route answers; and that
// every such heading names one of them, so a route that is added, renamed or
// removed without its documentation fails here.
func TestAPIDocsCoverEveryRoute(t *testing.T) {
	n := newWiredNode(t, "")
	headings := apiDocsHeadings(t)
	routes := documentedRoutes(n.srv)
	want := slices.Concat(routes, slices.Collect(maps.Keys(routeAliases)))
	for _, op := range want {
		if _, ok := headings[op]; !ok {
			t.Errorf("docs/api.md has no \"### `%s`\" section", op)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(headings)) {
		if !slices.Contains(want, op) {
			t.Errorf("docs/api.md:%d: heading %s names no route of the server", headings[op], op)
		}
	}
	checkAliases(t, n.srv, routes)
}
