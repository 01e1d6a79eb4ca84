package main

import (
	"fmt"
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
	s := newSurvey(t, n.url, n.token)
	result := strings.Repeat("\u0001", 174000)
	for i := range 18 {
		id := s.publish(fmt.Sprintf("Survey %d", i))
		s.claim(id)
		s.complete(id, result)
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
