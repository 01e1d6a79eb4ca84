package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

func TestAuditFilters(t *testing.T) {
	n := newTestNode(t)
	var recorded []eventlog.AuditEntry
	for _, a := range []string{"node.started", "token.created", "config.updated", "token.rotated", "token.revoked"} {
		e, err := n.log.Audit(context.Background(), a, n.log.NodeDID(), map[string]string{"why": "<test>"})
		if err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, e)
	}
	actions := func(query string) []string {
		t.Helper()
		r := n.get("/v1/audit" + query)
		if r.status != http.StatusOK {
			t.Fatalf("status %d (body %s)", r.status, r.body)
		}
		var body struct {
			Entries []eventlog.AuditEntry `json:"entries"`
		}
		r.decode(t, &body)
		if body.Entries == nil {
			t.Fatalf("entries is null or missing: %s", r.body)
		}
		out := []string{}
		for i, e := range body.Entries {
			out = append(out, e.Action)
			if i > 0 && e.Timestamp <= body.Entries[i-1].Timestamp {
				t.Errorf("entries out of order: %s", r.body)
			}
		}
		return out
	}
	since := url.QueryEscape(recorded[1].Timestamp)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"node.started", "token.created", "config.updated", "token.rotated", "token.revoked"}},
		{"?action=token.*", []string{"token.created", "token.rotated", "token.revoked"}},
		{"?action=token.rotated", []string{"token.rotated"}},
		{"?action=oracle.*", []string{}},
		{"?since=" + since, []string{"config.updated", "token.rotated", "token.revoked"}},
		{"?since=" + since + "&action=token.*", []string{"token.rotated", "token.revoked"}},
		{"?limit=2", []string{"node.started", "token.created"}},
		{"?action=token.*&limit=1", []string{"token.created"}},
		{"?since=2999-01-01T00:00:00Z", []string{}},
	} {
		if got := actions(tc.query); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	// Details are served byte for byte as recorded.
	r := n.get("/v1/audit?action=node.started")
	if want := `"detail":` + string(recorded[0].Detail) + `}`; !containsBytes(r.body, want) {
		t.Errorf("body %s lacks %s", r.body, want)
	}
}
