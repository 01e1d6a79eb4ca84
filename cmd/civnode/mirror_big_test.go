package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/transparency"
)

// TestMirrorBigBundle: an honest origin whose first event bundle is over
// 16 MiB (18 missions completed with results of 174,000 × U+0001, which the
// chain stores escaped, six bytes each: about 1 MiB an event, each result
// within the node's own bounds) is mirrored by civnode mirror --once from its
// API and from the directory transparency publish wrote, served by a plain
// static file server, byte for byte both times.
func TestMirrorBigBundle(t *testing.T) {
	origin := filepath.Join(t.TempDir(), "origin")
	n := startNode(t, origin)
	post := func(path string, body any, v any) {
		t.Helper()
		code, b := msPost(t, n.url, n.token, path, body)
		if code != http.StatusOK {
			t.Fatalf("POST %s: %d %.300s", path, code, b)
		}
		if v != nil {
			json.Unmarshal(b, v)
		}
	}
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	post("/v1/civilization/bootstrap-identity", map[string]any{"display_name": "Ada", "public_id": "ada", "role": "enforcer"}, &ada)
	post("/v1/civilization/controller-binding", map[string]any{"agent_did": ada.AgentDID, "controller_kind": "local_model", "controller_ref": "r"}, nil)
	result := strings.Repeat("\u0001", 174000)
	for i := range 18 {
		var m struct {
			MissionID string `json:"mission_id"`
		}
		post("/v1/core/missions", map[string]any{"title": fmt.Sprintf("Survey %d", i), "description": "Survey the belt.", "publisher": "genesis",
			"publisher_kind": "planetary_government", "domain": "research", "subnet_id": "genesis", "required_role": "enforcer",
			"reward": map[string]int{"agent_credit": 7, "reputation": 1, "capacity": 0, "treasury_share_credit": 2}}, &m)
		post("/v1/core/missions/"+m.MissionID+"/claim", map[string]any{"claimer": "ada"}, nil)
		post("/v1/core/missions/"+m.MissionID+"/complete", map[string]any{"result": result}, nil)
	}
	var sum struct {
		TreeSize int64 `json:"tree_size"`
	}
	getJSON(t, n.url+"/v1/transparency", n.token, 200, &sum)
	if sum.TreeSize > transparency.BundleSize {
		t.Fatalf("the chain has %d events; the test wants them in one bundle", sum.TreeSize)
	}
	bundle := trGet(t, n.url+"/v1/transparency/"+transparency.BundlePath(0, int(sum.TreeSize)), n.token)
	if len(bundle) <= 16<<20 {
		t.Fatalf("the bundle is %d bytes, not over 16 MiB", len(bundle))
	}
	t.Logf("%d events, a bundle of %d bytes", sum.TreeSize, len(bundle))

	fromAPI := filepath.Join(t.TempDir(), "api")
	start := time.Now()
	out, errOut, code := mrMirror(t, n.url, fromAPI, "--token", trObserverToken(t, origin))
	t.Logf("mirror --once from the API: %v", time.Since(start).Round(time.Millisecond))
	want := fmt.Sprintf("%d events stored", sum.TreeSize)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("mirror --once from the API: exit %d, %q %q; want %q", code, out, errOut, want)
	}
	n.stop(t)
	requireSameChain(t, origin, fromAPI, int(sum.TreeSize))

	_, url := mrPublish(t, origin)
	fromStatic := filepath.Join(t.TempDir(), "static")
	start = time.Now()
	out, errOut, code = mrMirror(t, url, fromStatic)
	t.Logf("mirror --once from the static host: %v", time.Since(start).Round(time.Millisecond))
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("mirror --once from the static host: exit %d, %q %q; want %q", code, out, errOut, want)
	}
	requireSameChain(t, origin, fromStatic, int(sum.TreeSize))
	out, _, code = mrMirror(t, url, fromStatic)
	if code != 0 || !strings.HasPrefix(out, "unchanged: ") {
		t.Fatalf("mirror --once again: exit %d, %q", code, out)
	}
}
