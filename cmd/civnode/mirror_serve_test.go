package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// msPost posts body to the node at url with token and returns the status and
// the answer.
func msPost(t *testing.T, url, token, path string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// msGet is the status, Content-Type and body of GET url with token.
func msGet(t *testing.T, url, token string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// TestServeMirror: civnode serve --mirror-of a published directory, served by
// a plain static file server, follows the origin and answers every read route
// byte for byte as the origin does at the same tip (events pages, the
// transparency log, proofs and tiles, mission and identity views); every write
// answers 403 read_only_mirror; its export carries the origin's seal and
// verifies with civnode verify and with the independent JS verifier.
func TestServeMirror(t *testing.T) {
	origin := filepath.Join(t.TempDir(), "origin")
	n := startNode(t, origin)
	s := newSurvey(t, n.url, n.token)
	missionID := s.publish("Survey")
	s.claim(missionID)
	n.stop(t)
	trAppend(t, origin, "more", 700)
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	static := httptest.NewServer(http.FileServer(http.Dir(pub)))
	defer static.Close()

	n = startNode(t, origin)
	mirror := filepath.Join(t.TempDir(), "mirror")
	mn := startNodeArgs(t, mirror, "--mirror-of", static.URL, "--mirror-interval", "100ms")
	var sum struct {
		TreeSize int64 `json:"tree_size"`
	}
	getJSON(t, n.url+"/v1/transparency", n.token, 200, &sum)
	deadline := time.Now().Add(waitTimeout)
	for {
		var ms struct {
			TreeSize int64 `json:"tree_size"`
		}
		code, _, b := msGet(t, mn.url+"/v1/transparency", mn.token)
		if code == 200 && json.Unmarshal(b, &ms) == nil && ms.TreeSize == sum.TreeSize {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror did not reach tree size %d: %d %s\nstderr:\n%s", sum.TreeSize, code, b, mn.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var page struct {
		Next string `json:"next"`
	}
	getJSON(t, n.url+"/v1/events?limit=100", n.token, 200, &page)
	routes := []string{
		"/v1/events", "/v1/events?limit=100", "/v1/events?type=test.note&limit=50",
		"/v1/events?limit=100&cursor=" + page.Next,
		"/v1/transparency", "/v1/transparency/checkpoint", // the seal is the origin's of its publish, not of now
		fmt.Sprintf("/v1/transparency/proof/inclusion?seq=%d", sum.TreeSize/2),
		fmt.Sprintf("/v1/transparency/proof/consistency?from=10&to=%d", sum.TreeSize),
		"/v1/transparency/tile/0/000", "/v1/transparency/tile/1/000.p/2", "/v1/transparency/events/001",
		"/v1/core/missions", "/v1/core/missions/" + missionID,
		"/v1/civilization/identities", "/v1/civilization/public-identity?public_id=ada",
		"/v1/civilization/profile?public_id=ada", "/v1/civilization/metrics",
		"/v1/game/catalog",
	}
	for _, r := range routes {
		oc, oct, ob := msGet(t, n.url+r, n.token)
		mc, mct, mb := msGet(t, mn.url+r, mn.token)
		if r == "/v1/transparency" {
			// Each says what only it has: the origin its fork guard, the
			// mirror how it follows.
			ob, mb = withoutMember(ob, "fork_guard"), withoutMirrorStatus(t, mb)
		}
		if oc != mc || oct != mct || !bytes.Equal(ob, mb) {
			t.Errorf("GET %s:\norigin %d %s %.300s\nmirror %d %s %.300s", r, oc, oct, ob, mc, mct, mb)
		}
	}

	for path, body := range map[string]any{
		"/v1/core/missions/" + missionID + "/complete": map[string]any{"result": "done"},
		"/v1/civilization/bootstrap-identity":          map[string]any{"display_name": "Bo", "public_id": "bo", "role": "enforcer"},
		"/v1/node/proof":                               map[string]any{"nonce": strings.Repeat("ab", 32)},
	} {
		code, b := msPost(t, mn.url, mn.token, path, body)
		if code != http.StatusForbidden || !strings.Contains(string(b), `"code":"read_only_mirror"`) {
			t.Errorf("POST %s on the mirror: %d %s; want 403 read_only_mirror", path, code, b)
		}
	}

	code, _, export := msGet(t, mn.url+"/v1/events/export", mn.token)
	if code != 200 {
		t.Fatalf("the mirror's export: %d %s", code, export)
	}
	file := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(file, export, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := runBinary(t, "verify", file); code != 0 || !strings.Contains(out, fmt.Sprint(sum.TreeSize)) {
		t.Fatalf("civnode verify of the mirror's export: exit %d, %q", code, out)
	}
	if nodeJS, err := exec.LookPath("node"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, nodeJS, "../../docs/examples/verify-bundle.mjs", file).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok") {
			t.Fatalf("verify-bundle.mjs of the mirror's export: %v, %q", err, out)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("node is not on PATH: install Node.js 20 or later to run docs/examples/verify-bundle.mjs")
	}
	mn.stop(t)
	n.stop(t)
}

// withoutMirrorStatus is a mirror's GET /v1/transparency answer without its
// mirror object, which a node of its own does not have; the rest is the
// origin's answer byte for byte. The object must say the mirror follows.
func withoutMirrorStatus(t *testing.T, b []byte) []byte {
	t.Helper()
	var ans struct {
		Mirror *struct {
			State string `json:"state"`
		} `json:"mirror"`
	}
	if err := json.Unmarshal(b, &ans); err != nil || ans.Mirror == nil || ans.Mirror.State != "following" {
		t.Errorf("the mirror's GET /v1/transparency has no mirror object in the state following: %v %s", err, b)
		return b
	}
	return withoutMember(b, "mirror")
}

// withoutMember is a JSON object's bytes without its member name, whose
// value is an object of scalars.
func withoutMember(b []byte, name string) []byte {
	i := bytes.Index(b, []byte(`,"`+name+`":{`))
	if i < 0 {
		return b
	}
	j := bytes.IndexByte(b[i:], '}')
	return append(append([]byte{}, b[:i]...), b[i+j+1:]...)
}
