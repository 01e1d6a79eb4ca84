package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
)

// TestServeMissionsSurviveRestart: a mission published and taken through its
// lifecycle on a running node reads the same after a restart, and replay prints
// the rebuilt mission models.
func TestServeMissionsSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	s := newSurvey(t, n.url, n.token)
	id := s.publish("Survey")
	s.claim(id)
	s.complete(id, "surveyed")
	s.settle(id)
	before := getJSON(t, n.url+"/v1/core/missions/"+id, n.token, 200, nil)
	state := getJSON(t, n.url+"/v1/state", n.token, 200, nil)
	n.stop(t)

	n = startNode(t, dir)
	if after := getJSON(t, n.url+"/v1/core/missions/"+id, n.token, 200, nil); !bytes.Equal(before, after) {
		t.Errorf("after restart:\n %s\n want %s", after, before)
	}
	var st struct {
		Balance json.RawMessage `json:"balance"`
	}
	json.Unmarshal(getJSON(t, n.url+"/v1/state", n.token, 200, nil), &st)
	var was struct {
		Balance json.RawMessage `json:"balance"`
	}
	json.Unmarshal(state, &was)
	if string(st.Balance) != `{"credit":2,"reputation":0,"capacity":0}` || string(st.Balance) != string(was.Balance) {
		t.Errorf("balance %s, before the restart %s", st.Balance, was.Balance)
	}
	n.stop(t)

	res := runCLI(t, nil, "replay", "--data-dir", dir)
	want := regexp.MustCompile(`(?m)^missions +1\nmissions_open +0\nmissions_settled +1\ncredits_paid +7\ntreasury_credits +2\nmissions_skipped +0$`)
	if res.code != 0 || !want.MatchString(res.stdout) {
		t.Errorf("replay: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}
