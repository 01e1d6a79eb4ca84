package http

import (
	"net/http"
	"testing"
)

func TestHealthNeedsNoToken(t *testing.T) {
	n := newTestNode(t)
	for _, tc := range []struct{ name, token string }{
		{"no token", ""},
		{"owner token", testToken},
		{"wrong token", "not-the-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := n.request(http.MethodGet, "/v1/health", tc.token, nil)
			if r.status != http.StatusOK {
				t.Fatalf("status = %d, want 200 (body %s)", r.status, r.body)
			}
			var body map[string]any
			r.decode(t, &body)
			if len(body) != 1 || body["status"] != "ok" {
				t.Errorf("body = %s, want {\"status\":\"ok\"}", r.body)
			}
		})
	}
	if got := n.auditEntries("auth.failed"); len(got) != 0 {
		t.Errorf("health with a wrong token was audited as a failed authentication: %v", got)
	}
}
