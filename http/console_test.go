package http

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// consoleDir is the console's source, read here apart from the embedded copy,
// so that the tests compare what is served with what is in the tree.
var consoleDir = "console"

// consoleOnDisk is every file of the console's source directory by name.
func consoleOnDisk(t *testing.T) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(consoleDir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(consoleDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	if len(files) < 3 {
		t.Fatalf("only %d console files on disk", len(files))
	}
	return files
}

// wantConsoleHeaders checks the headers every console file is served with.
func wantConsoleHeaders(t *testing.T, name string, h http.Header) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy":      consoleCSP,
		"X-Content-Type-Options":       "nosniff",
		"Referrer-Policy":              "no-referrer",
		"X-Frame-Options":              "DENY",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
		"Cache-Control":                "no-cache",
	} {
		if got := h.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s = %q, want exactly %q", name, k, got, want)
		}
	}
	if h.Get("Set-Cookie") != "" {
		t.Errorf("%s sets a cookie", name)
	}
}

// TestConsoleFilesServed: every file of the console's source directory is
// served without a token, byte for byte, with its content type, the console's
// headers and a strong ETag that is a hash of its bytes; "/" is index.html.
func TestConsoleFilesServed(t *testing.T) {
	n := newTestNode(t)
	disk := consoleOnDisk(t)
	types := map[string]string{
		".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
		".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml",
	}
	etags := map[string]string{}
	for name, want := range disk {
		r := n.request(http.MethodGet, "/v1/console/"+name, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s without a token: %d %s", name, r.status, r.body)
		}
		if !bytes.Equal(r.body, want) {
			t.Errorf("%s: served %d bytes that differ from the %d on disk", name, len(r.body), len(want))
		}
		if got, want := r.header.Get("Content-Type"), types[path.Ext(name)]; want == "" || got != want {
			t.Errorf("%s: Content-Type %q, want %q", name, got, want)
		}
		wantConsoleHeaders(t, name, r.header)
		etag := r.header.Get("ETag")
		if !regexp.MustCompile(`^"[A-Za-z0-9_-]{20,}"$`).MatchString(etag) {
			t.Errorf("%s: ETag %q is not a strong tag of a hash", name, etag)
		}
		if other, seen := etags[etag]; seen {
			t.Errorf("%s and %s have the same ETag %s", name, other, etag)
		}
		etags[etag] = name
		if r.header.Get("Content-Length") != strconv.Itoa(len(want)) {
			t.Errorf("%s: Content-Length %q, want %d", name, r.header.Get("Content-Length"), len(want))
		}
	}
	root := n.request(http.MethodGet, "/v1/console/", "", nil)
	if root.status != http.StatusOK || !bytes.Equal(root.body, disk["index.html"]) {
		t.Errorf("GET /v1/console/: %d, want index.html", root.status)
	}
	wantConsoleHeaders(t, "/", root.header)
	// Every embedded file is one on disk, and the other way round.
	if len(consoleFiles) != len(disk) {
		t.Errorf("%d files embedded, %d on disk", len(consoleFiles), len(disk))
	}
}

// TestConsoleRevalidates: a reload with the ETag is answered 304 without a
// body; a stale or foreign tag gets the file.
func TestConsoleRevalidates(t *testing.T) {
	n := newTestNode(t)
	first := n.request(http.MethodGet, "/v1/console/console.js", "", nil)
	etag := first.header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	for _, tc := range []struct {
		ifNoneMatch string
		status      int
	}{
		{etag, http.StatusNotModified},
		{"W/" + etag, http.StatusNotModified}, // If-None-Match compares weakly
		{`"other", ` + etag, http.StatusNotModified},
		{"*", http.StatusNotModified},
		{`"other"`, http.StatusOK},
		{strings.TrimSuffix(etag, `"`) + `x"`, http.StatusOK},
	} {
		r := n.request(http.MethodGet, "/v1/console/console.js", "", nil, "If-None-Match", tc.ifNoneMatch)
		if r.status != tc.status {
			t.Errorf("If-None-Match %s: %d, want %d", tc.ifNoneMatch, r.status, tc.status)
			continue
		}
		if r.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: ETag %q, want %q", tc.ifNoneMatch, r.header.Get("ETag"), etag)
		}
		wantConsoleHeaders(t, "console.js", r.header)
		if tc.status == http.StatusNotModified && (len(r.body) != 0 || r.header.Get("Content-Type") != "") {
			t.Errorf("304 carries a body (%d bytes) or a Content-Type (%q)", len(r.body), r.header.Get("Content-Type"))
		}
		if tc.status == http.StatusOK && !bytes.Equal(r.body, first.body) {
			t.Errorf("If-None-Match %s: body differs", tc.ifNoneMatch)
		}
	}
	// Another file's tag is not this one's.
	other := n.request(http.MethodGet, "/v1/console/console.css", "", nil).header.Get("ETag")
	if r := n.request(http.MethodGet, "/v1/console/console.js", "", nil, "If-None-Match", other); r.status != http.StatusOK {
		t.Errorf("console.css's ETag revalidated console.js: %d", r.status)
	}
}

// TestConsoleHead: HEAD is GET's headers without the body.
func TestConsoleHead(t *testing.T) {
	n := newTestNode(t)
	get := n.request(http.MethodGet, "/v1/console/", "", nil)
	head := n.request(http.MethodHead, "/v1/console/", "", nil)
	if head.status != http.StatusOK || len(head.body) != 0 {
		t.Fatalf("HEAD: %d with %d bytes", head.status, len(head.body))
	}
	for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Content-Security-Policy", "Cache-Control"} {
		if head.header.Get(k) != get.header.Get(k) {
			t.Errorf("HEAD %s = %q, GET's %q", k, head.header.Get(k), get.header.Get(k))
		}
	}
	if head.header.Get("Content-Length") != strconv.Itoa(len(get.body)) {
		t.Errorf("HEAD Content-Length %q, body is %d bytes", head.header.Get("Content-Length"), len(get.body))
	}
}

// TestConsoleNotFound: a name that is not one of the console's files is the
// API's JSON 404 with the API's default headers, not the console's; the bare
// path redirects to the console; only GET and HEAD are served.
func TestConsoleNotFound(t *testing.T) {
	n := newTestNode(t)
	for _, p := range []string{
		"/v1/console/nope.js", "/v1/console/index.htm", "/v1/console/console/index.html",
		"/v1/console/sub/index.html", "/v1/console/..%2fserver.go", "/v1/console/%2e%2e/console.go",
		"/v1/console/.hidden", "/v1/console//index.html",
	} {
		r := n.request(http.MethodGet, p, "", nil)
		r.wantError(t, http.StatusNotFound, codeNotFound, "")
		wantDefaultHeaders(t, p, r.header)
	}

	r := noRedirect(t, n.url+"/v1/console")
	if r.status != http.StatusMovedPermanently || r.header.Get("Location") != "/v1/console/" {
		t.Errorf("GET /v1/console: %d to %q, want 301 to /v1/console/", r.status, r.header.Get("Location"))
	}
	var body map[string]string
	r.decode(t, &body)
	if body["location"] != "/v1/console/" {
		t.Errorf("redirect body %s", r.body)
	}
	wantDefaultHeaders(t, "/v1/console", r.header)

	post := n.request(http.MethodPost, "/v1/console/", "", strings.NewReader("{}"), "Content-Type", "application/json")
	post.wantError(t, http.StatusMethodNotAllowed, codeMethodNotAllowed, "")
	if allow := post.header.Get("Allow"); !strings.Contains(allow, "GET") || strings.Contains(allow, "POST") {
		t.Errorf("Allow: %q", allow)
	}
}

// noRedirect GETs url without following a redirect.
func noRedirect(t *testing.T, url string) response {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(url)
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

// wantDefaultHeaders checks the server's default headers (secheaders.go).
func wantDefaultHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": defaultCSP,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := h.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %s = %q, want exactly %q", what, k, got, want)
		}
	}
}

// TestDefaultSecurityHeaders: every kind of answer carries the strict
// defaults: a handler's JSON, an error a handler returns, the router's 404,
// 405 and OPTIONS, the authentication's 401 and the refusal of a content
// encoding, which answer before any handler.
func TestDefaultSecurityHeaders(t *testing.T) {
	n := newCivNode(t)
	for _, tc := range []struct {
		method, path, token string
		status              int
		headers             []string
	}{
		{http.MethodGet, "/v1/health", "", http.StatusOK, nil},
		{http.MethodGet, "/v1/state", testToken, http.StatusOK, nil},
		{http.MethodGet, "/v1/events?limit=1", testToken, http.StatusOK, nil},
		{http.MethodGet, "/v1/core/missions", testToken, http.StatusOK, nil},
		{http.MethodGet, "/v1/state", "", http.StatusUnauthorized, nil},
		{http.MethodGet, "/v1/core/missions?state=open", testToken, http.StatusBadRequest, nil},
		{http.MethodGet, "/v1/nope", "", http.StatusNotFound, nil},
		{http.MethodPost, "/v1/health", "", http.StatusMethodNotAllowed, nil},
		{http.MethodOptions, "/v1/state", "", http.StatusNoContent, nil},
		{http.MethodPost, "/v1/core/missions", testToken, http.StatusUnsupportedMediaType, []string{"Content-Encoding", "gzip"}},
	} {
		var body io.Reader
		if tc.method == http.MethodPost {
			body = strings.NewReader("{}")
		}
		r := n.request(tc.method, tc.path, tc.token, body, tc.headers...)
		what := tc.method + " " + tc.path
		if r.status != tc.status {
			t.Errorf("%s: %d, want %d (%s)", what, r.status, tc.status, r.body)
		}
		wantDefaultHeaders(t, what, r.header)
	}
}

// TestConsoleDataNeedsToken: serving the console's files without a token
// opens no data route: each still answers 401 without one, and ?token= is
// taken only by the stream, for which browsers have no other way.
func TestConsoleDataNeedsToken(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{})
	for _, p := range []string{"/v1/state", "/v1/events", "/v1/events/export", "/v1/audit",
		"/v1/client/network/status", "/v1/events?token=" + testToken, "/v1/state?token=" + testToken} {
		r := n.request(http.MethodGet, p, "", nil)
		r.wantError(t, http.StatusUnauthorized, codeUnauthorized, "")
	}
	resp := n.dialRefused(t, "", nil)
	if resp.status != http.StatusUnauthorized {
		t.Errorf("stream without a token: %d", resp.status)
	}
	if _, _, err := n.dial(t, "?token="+url.QueryEscape(testToken), nil, nil); err != nil {
		t.Errorf("stream with ?token=: %v", err)
	}
}

// htmlNode is an element of index.html as encoding/xml reads it in its HTML
// mode: enough for a page we write ourselves, whose real parsing the browser
// test checks.
type htmlNode struct {
	name  string
	attrs map[string]string
	text  string // character data directly inside
}

func parseHTML(t *testing.T, b []byte) []htmlNode {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var nodes []htmlNode
	var open []int // indexes into nodes of the elements open
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parse index.html: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				name := strings.ToLower(a.Name.Local)
				if a.Name.Space != "" {
					name = strings.ToLower(a.Name.Space) + ":" + name
				}
				if _, dup := attrs[name]; dup {
					t.Errorf("<%s> repeats the attribute %s", tok.Name.Local, name)
				}
				attrs[name] = a.Value
			}
			nodes = append(nodes, htmlNode{name: strings.ToLower(tok.Name.Local), attrs: attrs})
			open = append(open, len(nodes)-1)
		case xml.EndElement:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		case xml.CharData:
			if len(open) > 0 {
				nodes[open[len(open)-1]].text += string(tok)
			}
		}
	}
	return nodes
}

// sameOrigin reports whether a reference stays on the page's origin: a
// relative path, no scheme, no host.
func sameOrigin(ref string) bool {
	u, err := url.Parse(ref)
	return err == nil && u.Scheme == "" && u.Host == "" && !strings.HasPrefix(ref, "//")
}

// TestConsoleIndexHTML holds the page to what its CSP enforces and to the
// console's own rules: scripts only from its own files, no inline script, handler or
// style; every reference same-origin and served; every form control labelled.
func TestConsoleIndexHTML(t *testing.T) {
	nodes := parseHTML(t, consoleFiles["index.html"].body)
	ids := map[string]bool{}
	labels := map[string]bool{}
	var scripts, landmarks int
	for _, n := range nodes {
		if id := n.attrs["id"]; id != "" {
			if ids[id] {
				t.Errorf("id %q is used twice", id)
			}
			ids[id] = true
		}
		if n.name == "label" {
			labels[n.attrs["for"]] = true
		}
		for a := range n.attrs {
			if strings.HasPrefix(a, "on") {
				t.Errorf("<%s> has the event handler attribute %s", n.name, a)
			}
			if a == "style" {
				t.Errorf("<%s> has a style attribute", n.name)
			}
		}
		switch n.name {
		case "style":
			t.Errorf("index.html has a <style> element")
		case "script":
			scripts++
			if strings.TrimSpace(n.text) != "" {
				t.Errorf("inline script: %q", n.text)
			}
			if n.attrs["type"] != "module" {
				t.Errorf("script %q is not a module", n.attrs["src"])
			}
		case "main", "header":
			landmarks++
		case "html":
			if n.attrs["lang"] == "" {
				t.Error("<html> has no lang")
			}
		}
		for _, a := range []string{"src", "href", "action", "formaction", "data", "poster"} {
			ref, ok := n.attrs[a]
			if !ok || strings.HasPrefix(ref, "#") {
				continue
			}
			if !sameOrigin(ref) {
				t.Errorf("<%s %s=%q> leaves the origin", n.name, a, ref)
				continue
			}
			if _, served := consoleFiles[path.Clean(ref)]; !served {
				t.Errorf("<%s %s=%q> names no console file", n.name, a, ref)
			}
		}
	}
	if scripts != 1 || landmarks < 2 {
		t.Errorf("%d scripts and %d landmarks; want the one module and a header and main", scripts, landmarks)
	}
	for _, n := range nodes {
		if (n.name == "input" || n.name == "select" || n.name == "textarea") && !labels[n.attrs["id"]] && n.attrs["aria-label"] == "" {
			t.Errorf("<%s id=%q> has no label", n.name, n.attrs["id"])
		}
	}
}

// TestConsoleScripts checks the console's modules for what would break under
// its CSP or leak the token: HTML-string sinks (refused by trusted-types
// 'none'), eval, style attributes, storage that outlives the tab; and that
// every import names a served file.
func TestConsoleScripts(t *testing.T) {
	forbidden := []*regexp.Regexp{
		regexp.MustCompile(`\.(innerHTML|outerHTML)\b`),
		regexp.MustCompile(`insertAdjacentHTML|document\.write|createContextualFragment|DOMParser`),
		regexp.MustCompile(`\beval\(|new Function\(|setTimeout\(\s*["'\x60]`),
		regexp.MustCompile(`setAttribute\(\s*["']style["']|\.cssText\b`),
		regexp.MustCompile(`localStorage|document\.cookie|indexedDB`),
		regexp.MustCompile(`https?://|wss?://`),
	}
	imports := regexp.MustCompile(`(?m)^\s*import\s[^;]*?from\s+"([^"]+)"`)
	var modules int
	for name, f := range consoleFiles {
		if path.Ext(name) != ".js" {
			continue
		}
		modules++
		// The SVG namespace is a name, not an address the page reaches.
		src := strings.ReplaceAll(string(f.body), `"http://www.w3.org/2000/svg"`, `""`)
		for _, re := range forbidden {
			if loc := re.FindStringIndex(src); loc != nil {
				t.Errorf("%s:%d uses %q", name, strings.Count(src[:loc[0]], "\n")+1, src[loc[0]:loc[1]])
			}
		}
		for _, m := range imports.FindAllStringSubmatch(src, -1) {
			if !strings.HasPrefix(m[1], "./") {
				t.Errorf("%s imports %q, not a console file", name, m[1])
			} else if _, ok := consoleFiles[strings.TrimPrefix(m[1], "./")]; !ok {
				t.Errorf("%s imports %q, which is not served", name, m[1])
			}
		}
	}
	if modules < 2 {
		t.Fatalf("only %d modules", modules)
	}
	// The token is sent only as a bearer header, and in ?token= only for the
	// stream, from the one place that builds its URL.
	var tokenInURL []string
	for name, f := range consoleFiles {
		if strings.Contains(string(f.body), "token: this.token") {
			tokenInURL = append(tokenInURL, name)
		}
	}
	if !slices.Equal(tokenInURL, []string{"api.js"}) || !strings.Contains(string(consoleFiles["api.js"].body), `url.protocol = url.protocol === "https:" ? "wss:" : "ws:"`) {
		t.Errorf("the token goes into a URL in %v; want only the stream's URL in api.js", tokenInURL)
	}
}

// TestConsoleHoldsNoData: the files are the same for every node and every
// visitor: no DID, key, hash or token in them.
func TestConsoleHoldsNoData(t *testing.T) {
	secretish := regexp.MustCompile(`did:key:z[1-9A-HJ-NP-Za-km-z]{20,}|cvn_[0-9a-f]{8,}|\b[0-9a-f]{64}\b`)
	for name, f := range consoleFiles {
		if m := secretish.Find(f.body); m != nil {
			t.Errorf("%s holds %q", name, m)
		}
	}
}

// TestConsoleLoad: a file without a known content type, a directory, or a
// console without index.html fails the build rather than being served wrong.
func TestConsoleLoad(t *testing.T) {
	good := fstest.MapFS{"console/index.html": {Data: []byte("<!doctype html>")}, "console/a.js": {Data: []byte("x")}}
	files, err := loadConsole(good)
	if err != nil || len(files) != 2 || files["a.js"].ctype != "text/javascript; charset=utf-8" {
		t.Fatalf("loadConsole: %v, %v", files, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"unknown type": {"console/index.html": {}, "console/data.json": {}},
		"directory":    {"console/index.html": {}, "console/sub/a.js": {}},
		"no index":     {"console/a.js": {}},
	} {
		if _, err := loadConsole(fsys); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
