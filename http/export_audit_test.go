package http

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// A loop of exports does not write one fsynced audit entry each: beyond the rate
// they are coalesced, and the entries still count every export.
func TestExportAuditIsCoalesced(t *testing.T) {
	n := newTestNode(t)
	const exports = 300
	start := time.Now()
	for range exports {
		if r := n.request(http.MethodGet, "/v1/events/export", testToken, nil); r.status != http.StatusOK {
			t.Fatalf("export: %d %s", r.status, r.body)
		}
	}
	elapsed := time.Since(start)
	n.srv.exportAudit.close() // what Serve does when it stops
	entries := n.auditEntries("export.sealed")
	// The burst, one per second of the loop, and the one close wrote.
	if limit := exportAuditBurst + int(elapsed/time.Second) + 2; len(entries) > limit {
		t.Errorf("%d export.sealed entries for %d exports in %v; want at most %d", len(entries), exports, elapsed, limit)
	}
	var counted uint64
	for _, e := range entries {
		var d exportSealedDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if d.ExportID == "" || d.EventCount != 1 {
			t.Errorf("entry names no export: %s", e.Detail)
		}
		counted += 1 + d.Coalesced
	}
	if counted != exports {
		t.Errorf("entries count %d exports, want %d", counted, exports)
	}
	// An entry of a lone export keeps its documented shape: no coalesced field.
	var first map[string]any
	if err := json.Unmarshal(entries[0].Detail, &first); err != nil {
		t.Fatal(err)
	}
	if _, has := first["coalesced"]; has || len(first) != 3 {
		t.Errorf("first entry detail %v, want export_id, event_count, chain_tip_hash", first)
	}
}
