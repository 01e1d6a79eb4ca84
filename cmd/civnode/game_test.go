package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestServeGameInstallsSurviveRestart: the starter set and the mission pack
// installed on a running node stay installed across a restart — the game's
// views read the same byte for byte, a repeat publishes nothing and answers
// with the same missions — and replay prints the rebuilt game model.
func TestServeGameInstallsSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	post := func(n *node, path string) (published bool, body []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, n.url+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+n.token)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var got struct {
			Published bool `json:"published"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		// The rest of the answer is the set as GET shows it.
		_, rest, _ := bytes.Cut(b, []byte(","))
		return got.Published, rest
	}
	installs := []string{"/v1/game/starter-missions/bootstrap", "/v1/game/mission-pack/bootstrap"}
	var first [][]byte
	for _, path := range installs {
		published, body := post(n, path)
		if !published {
			t.Fatalf("first %s did not publish", path)
		}
		first = append(first, body)
	}
	views := []string{"/v1/game/status", "/v1/game/starter-missions", "/v1/game/mission-pack", "/v1/game/bootstrap"}
	var before [][]byte
	for _, v := range views {
		before = append(before, getJSON(t, n.url+v, n.token, 200, nil))
	}
	n.stop(t)

	n = startNode(t, dir)
	for i, v := range views {
		if after := getJSON(t, n.url+v, n.token, 200, nil); !bytes.Equal(before[i], after) {
			t.Errorf("GET %s after the restart:\n %s\nwant\n %s", v, after, before[i])
		}
	}
	for i, path := range installs {
		published, body := post(n, path)
		if published || !bytes.Equal(body, first[i]) {
			t.Errorf("%s after the restart: published %v,\n %s\nwant\n %s", path, published, body, first[i])
		}
	}
	n.stop(t)

	res := runCLI(t, nil, "replay", "--data-dir", dir)
	want := regexp.MustCompile(`(?m)^missions +16\n(.*\n)*starter_missions_installed +true\nmission_packs_installed +1\ngame_skipped +0$`)
	if res.code != 0 || !want.MatchString(res.stdout) {
		t.Errorf("replay: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}
