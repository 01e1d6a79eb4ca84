package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// While the fork guard holds the log, every write answers 503
// behind_published naming what was seen where, nothing is appended, ready
// says why, and /v1/transparency and the metrics say so; reads go on. Once
// released, writes go through again.
func TestBehindPublishedHoldsWrites(t *testing.T) {
	n := newCivNodeServing(t, nil, func(o *Options) { o.ForkGuard = func() string { return "checked 1 witness" } })
	tip := int64(n.core.Log.Tip().Seq)
	n.core.Log.Hold(eventlog.Behind{Size: tip + 5, Tip: tip, Seen: "the published directory /srv/pub", Reason: "behind"})

	mission := missionBody(map[string]any{"publisher": "genesis", "publisher_kind": "planetary_government"})
	r := n.civSend(http.MethodPost, "/v1/core/missions", testToken, mission)
	var body map[string]any
	r.decode(t, &body)
	if r.status != http.StatusServiceUnavailable || body["code"] != "behind_published" {
		t.Fatalf("a write while held: %d %s", r.status, r.body)
	}
	if body["seen"] != "the published directory /srv/pub" || body["seen_tree_size"] != float64(tip+5) || body["tree_size"] != float64(tip) || body["reason"] != "behind" ||
		!strings.Contains(body["error"].(string), "5 more than this chain's") {
		t.Errorf("the 503 body: %s", r.body)
	}
	if got := int64(n.core.Log.Tip().Seq); got != tip {
		t.Errorf("a held node appended: tip %d, was %d", got, tip)
	}
	if r := n.request(http.MethodGet, "/v1/ready", "", nil); r.status != http.StatusServiceUnavailable || strings.TrimSpace(string(r.body)) != `{"ready":false,"reason":"behind_published"}` {
		t.Errorf("ready while held: %d %s", r.status, r.body)
	}
	var tr struct {
		ForkGuard map[string]any `json:"fork_guard"`
	}
	n.get("/v1/transparency").decode(t, &tr)
	if tr.ForkGuard["writable"] != false || tr.ForkGuard["reason"] != "behind" || tr.ForkGuard["seen_tree_size"] != float64(tip+5) || tr.ForkGuard["note"] != "checked 1 witness" {
		t.Errorf("fork_guard while held: %v", tr.ForkGuard)
	}
	m := n.get("/v1/metrics")
	for _, want := range []string{"civnode_eventlog_writes_held 1\n", "civnode_eventlog_behind_published_events 5\n"} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if r := n.get("/v1/events?limit=1"); r.status != http.StatusOK {
		t.Errorf("a read while held: %d %s", r.status, r.body)
	}

	n.core.Log.Release()
	if r := n.civSend(http.MethodPost, "/v1/core/missions", testToken, mission); r.status != http.StatusOK {
		t.Fatalf("a write after the release: %d %s", r.status, r.body)
	}
	n.get("/v1/transparency").decode(t, &tr)
	if tr.ForkGuard["writable"] != true {
		t.Errorf("fork_guard after the release: %v", tr.ForkGuard)
	}
	if !strings.Contains(string(n.get("/v1/metrics").body), "civnode_eventlog_writes_held 0\n") {
		t.Error("metrics: writes_held is not 0 after the release")
	}
}
