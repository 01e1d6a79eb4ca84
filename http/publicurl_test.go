package http

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// mcpPing posts an MCP ping with the given Host ("" the URL's) and headers.
func (n *testNode) mcpPing(host string, headers ...string) response {
	n.t.Helper()
	req, err := http.NewRequest(http.MethodPost, n.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		n.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	return response{status: resp.StatusCode, header: resp.Header, body: readAll(n.t, resp.Body)}
}

func TestMCPAcceptsPublicURL(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.PublicURL = "https://Node.Example.com/" }, nil)
	for _, c := range []struct {
		name, host string
		headers    []string
		want       int
	}{
		{"loopback Host", "", nil, http.StatusOK},
		{"the public Host", "node.example.com", nil, http.StatusOK},
		{"the public Host with its default port", "node.example.com:443", nil, http.StatusOK},
		{"the public Host on another port", "node.example.com:8443", nil, http.StatusForbidden},
		{"another Host", "civnode.example", nil, http.StatusForbidden},
		{"the public Origin", "node.example.com", []string{"Origin", "https://node.example.com"}, http.StatusOK},
		{"a loopback Origin", "", []string{"Origin", "http://localhost:3000"}, http.StatusOK},
		{"another Origin", "node.example.com", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"the same host on another port", "node.example.com", []string{"Origin", "http://node.example.com:8080"}, http.StatusForbidden},
		{"the same origin as the Host", "node.example.com", []string{"Origin", "http://node.example.com"}, http.StatusOK},
	} {
		r := n.mcpPing(c.host, c.headers...)
		if r.status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.want)
		}
		if c.want == http.StatusForbidden {
			var e struct{ Code string }
			if err := json.Unmarshal(r.body, &e); err != nil || e.Code != codeForbidden {
				t.Errorf("%s: body %s is not a forbidden error", c.name, r.body)
			}
		}
	}
	// Without a public URL the public host is a stranger.
	plain := newTestNode(t)
	if r := plain.mcpPing("node.example.com"); r.status != http.StatusForbidden {
		t.Errorf("no public URL, public Host: %d", r.status)
	}
	if r := plain.mcpPing("", "Origin", "https://node.example.com"); r.status != http.StatusForbidden {
		t.Errorf("no public URL, public Origin: %d", r.status)
	}
}

func TestOpenAPIServersIsPublicURL(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.PublicURL = "https://node.example.com/civ/" }, nil)
	r := n.request(http.MethodGet, "/v1/openapi.json", "", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d", r.status)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatalf("the served document is not JSON: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "https://node.example.com/civ" {
		t.Errorf("servers = %+v, want the public URL only", doc.Servers)
	}
	var embedded struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &embedded); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI == "" || len(doc.Paths) != len(embedded.Paths) {
		t.Errorf("the document lost its paths: %d of %d", len(doc.Paths), len(embedded.Paths))
	}
	etag := r.header.Get("ETag")
	if etag == openAPIETag || etag == "" {
		t.Errorf("ETag %q is the embedded document's", etag)
	}
	if r := n.request(http.MethodGet, "/v1/openapi.json", "", nil, "If-None-Match", etag); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match with the served ETag: %d", r.status)
	}
}

func TestParsePublicURL(t *testing.T) {
	for _, bad := range []string{"", "node.example.com", "ftp://node.example.com", "https://", "https://u:p@node.example.com",
		"https://node.example.com/?x=1", "https://node.example.com/#f", "https://:443"} {
		if _, err := ParsePublicURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for raw, want := range map[string]string{"https://node.example.com/": "https://node.example.com",
		"http://10.0.0.1:7777/civ": "http://10.0.0.1:7777/civ"} {
		u, err := ParsePublicURL(raw)
		if err != nil || u.String() != want {
			t.Errorf("%q → %v %v, want %q", raw, u, err, want)
		}
	}
}
