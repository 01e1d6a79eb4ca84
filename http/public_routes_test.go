package http

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestReadmeNamesEveryPublicRoute: every route that answers a request
// without a bearer token with anything but 401 is named in the README's
// list of the routes that need no token, so that the list is complete.
func TestReadmeNamesEveryPublicRoute(t *testing.T) {
	w := newMCPWorld(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	public := 0
	for _, route := range w.srv.routeTable {
		method, pattern, _ := strings.Cut(route, " ")
		// A parameter's name stands for its value; a catch-all is left
		// out of the README's form of the route.
		var path, named []string
		for _, seg := range strings.Split(pattern, "/") {
			switch {
			case strings.HasPrefix(seg, ":"):
				path, named = append(path, seg[1:]), append(named, seg)
			case strings.HasPrefix(seg, "*"):
				path, named = append(path, seg[1:]), append(named, "")
			default:
				path, named = append(path, seg), append(named, seg)
			}
		}
		res := w.request(method, strings.Join(path, "/"), "", strings.NewReader("{}"))
		if res.status == http.StatusUnauthorized {
			continue
		}
		public++
		if want := "`" + method + " " + strings.Join(named, "/"); !strings.Contains(string(readme), want) {
			t.Errorf("%s answers %d without a token, and README.md's list of such routes does not name it (%s`)", route, res.status, want)
		}
	}
	if public < 5 {
		t.Errorf("only %d routes answer without a token: the server is not fully wired", public)
	}
}
