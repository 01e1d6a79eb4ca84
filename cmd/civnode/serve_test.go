package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// TestServeEndToEnd runs the node in process through Main.Run on port 0 and
// drives it as an operator would: HTTP reads with the owner token, a stop and a
// restart, and the offline export, verify and replay commands.
func TestServeEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node") // serve creates it
	n := startNode(t, dir)

	// First start creates the data dir and its secrets with tight modes.
	if got := fileMode(t, dir); got != 0o700 {
		t.Errorf("data dir mode %v, want 0700", got)
	}
	for _, f := range []string{"node.key", "control.token"} {
		if got := fileMode(t, filepath.Join(dir, f)); got != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, got)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "control.token"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(raw) {
		t.Errorf("control.token holds %d bytes, want 64 hex digits and a newline", len(raw))
	}
	key, err := datadir.LoadNodeKey(filepath.Join(dir, "node.key"), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	did := eventlog.DIDKey(key.Public().(ed25519.PublicKey))

	var health map[string]any
	getJSON(t, n.url+"/v1/health", "", 200, &health)
	if len(health) != 1 || health["status"] != "ok" {
		t.Errorf("health = %v, want {status: ok}", health)
	}
	var unauth map[string]any
	getJSON(t, n.url+"/v1/state", "", 401, &unauth)
	if unauth["code"] != "unauthorized" {
		t.Errorf("state without token: code %v, want unauthorized", unauth["code"])
	}
	getJSON(t, n.url+"/v1/state", "not-the-token", 401, nil)
	var st stateBody
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)
	if st.Identity.NodeDID != did {
		t.Errorf("state node_did %q, want %q (from node.key)", st.Identity.NodeDID, did)
	}
	if st.Chain.Seq != 1 || st.Chain.RootHash == "" || st.Chain.TipHash != st.Chain.RootHash {
		t.Errorf("state chain = %+v, want seq 1 with tip = root", st.Chain)
	}
	var evs eventsBody
	getJSON(t, n.url+"/v1/events", n.token, 200, &evs)
	if evs.Total != 1 || len(evs.Events) != 1 || evs.Events[0].Type != eventlog.TypeGenesis || evs.Events[0].NodeDID != did {
		t.Fatalf("events = %+v, want the genesis event of %s", evs, did)
	}

	// The export a running node serves verifies through the verify - code path.
	bundle := getJSON(t, n.url+"/v1/events/export", n.token, 200, nil)
	res := runCLI(t, bundle, "verify", "-")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "ok: 1 events, node "+did+", root "+st.Chain.RootHash) {
		t.Fatalf("verify - of the HTTP export: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	// The running node holds the data dir.
	res = runCLI(t, nil, "verify", "--data-dir", dir)
	if res.code != 1 || !strings.Contains(res.stderr, "data dir in use by a running node") ||
		!strings.Contains(res.stderr, "| civnode verify -") {
		t.Errorf("verify --data-dir of a running node: code %d, stderr %q", res.code, res.stderr)
	}

	n.stop(t)
	appendNotes(t, dir, 1, 4) // the chain is now genesis + 4 events

	// A restart reuses the key, and the audit log shows the clean stop.
	n = startNode(t, dir)
	getJSON(t, n.url+"/v1/state", n.token, 200, &st)
	if st.Identity.NodeDID != did || st.Chain.Seq != 5 {
		t.Errorf("after restart: node_did %q seq %d, want %q seq 5", st.Identity.NodeDID, st.Chain.Seq, did)
	}
	getJSON(t, n.url+"/v1/events?limit=2", n.token, 200, &evs)
	if evs.Total != 5 || len(evs.Events) != 2 {
		t.Errorf("events?limit=2: total %d, %d events; want 5 and 2", evs.Total, len(evs.Events))
	}
	var audit auditBody
	getJSON(t, n.url+"/v1/audit?action=node.stopped", n.token, 200, &audit)
	if len(audit.Entries) != 1 || audit.Entries[0].Actor != did || !jsonEq(audit.Entries[0].Detail, `{"tip_seq":1}`) {
		t.Errorf("node.stopped entries = %+v, want one by %s with tip_seq 1", audit.Entries, did)
	}
	getJSON(t, n.url+"/v1/audit?action=node.started", n.token, 200, &audit)
	if len(audit.Entries) != 2 {
		t.Fatalf("node.started entries = %+v, want 2", audit.Entries)
	}
	var started struct {
		Addr    string `json:"addr"`
		Version string `json:"version"`
		TipSeq  uint64 `json:"tip_seq"`
	}
	if err := json.Unmarshal(audit.Entries[1].Detail, &started); err != nil {
		t.Fatal(err)
	}
	if "http://"+started.Addr != n.url || started.Version == "" || started.TipSeq != 5 || audit.Entries[1].Actor != did {
		t.Errorf("node.started = %+v %s, want addr of %s, a version and tip_seq 5", started, audit.Entries[1].Actor, n.url)
	}
	n.stop(t)

	// Offline: export, verify, tamper, replay.
	res = runCLI(t, nil, "export", "--data-dir", dir)
	if res.code != 0 {
		t.Fatalf("export: code %d, stderr %q", res.code, res.stderr)
	}
	bundle = []byte(res.stdout)
	res = runCLI(t, bundle, "verify", "-")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "ok: 5 events, node "+did) || strings.Count(res.stdout, "\n") != 1 {
		t.Fatalf("verify - of export: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	// One export.sealed by the owner's HTTP export, one by the node for the CLI's.
	if es := auditActions(t, dir, "export.sealed"); len(es) != 2 || es[1].Actor != did {
		t.Errorf("export.sealed entries = %+v, want the HTTP one and then one by %s", es, did)
	}

	// One byte of the payload of seq 3 ({"n":2}) changes.
	i := bytes.Index(bundle, []byte(`"payload":{"n":2}`))
	if i < 0 {
		t.Fatalf("payload of seq 3 not found in bundle")
	}
	tampered := bytes.Clone(bundle)
	tampered[i+len(`"payload":{"n":`)] = '7'
	res = runCLI(t, tampered, "verify", "-")
	if res.code != 1 || !strings.HasPrefix(res.stdout, "invalid: broken chain at seq 3:") {
		t.Errorf("verify - of tampered bundle: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	bundlePath := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(bundlePath, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	res = runCLI(t, nil, "verify", bundlePath)
	if res.code != 1 || !strings.HasPrefix(res.stdout, "invalid: broken chain at seq 3:") {
		t.Errorf("verify FILE of tampered bundle: code %d, stdout %q", res.code, res.stdout)
	}

	res = runCLI(t, nil, "verify", "--data-dir", dir)
	if res.code != 0 || !strings.HasPrefix(res.stdout, "ok: 5 events, node "+did+", root "+st.Chain.RootHash+", tip "+st.Chain.TipHash) {
		t.Errorf("verify --data-dir: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, nil, "replay", "--data-dir", dir)
	want := regexp.MustCompile(`(?m)^node\.genesis +1\ntest\.note +4\ntotal +5\n$`)
	if res.code != 0 || !want.MatchString(res.stdout) {
		t.Errorf("replay: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if es := auditActions(t, dir, "replay.completed"); len(es) != 1 || es[0].Actor != did {
		t.Errorf("replay.completed entries = %+v, want one by %s", es, did)
	}
}

func jsonEq(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
