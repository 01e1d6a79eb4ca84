package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// answersAt are the read routes a restored node must answer as the original
// did at the same tip.
var answersAt = []string{
	"/v1/events?limit=100",
	"/v1/events?type=mission.created",
	"/v1/core/missions",
	"/v1/civilization/identities",
	"/v1/civilization/public-identity?public_id=ada",
	"/v1/civilization/metrics",
	"/v1/game/status",
	"/v1/supervision/missions",
	"/v1/transparency",
	"/v1/transparency/checkpoint",
	"/v1/transparency/proof/inclusion?seq=3",
	"/v1/state",
}

// TestBackupRestoreImportAnswerAsTheOriginal: a backup of a running node,
// restored, and an export bundle, imported with the node's key, each give a
// data dir on which a node answers every read route byte for byte as the
// original did at that tip, and goes on appending where it stopped.
func TestBackupRestoreImportAnswerAsTheOriginal(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "orig")
	n := startNode(t, orig)
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	postOK(t, n.url, n.token, "/v1/game/starter-missions/bootstrap", `{}`)
	postOK(t, n.url, n.token, "/v1/core/missions", `{"title":"Index the archive","description":"by hand","publisher":"ada","publisher_kind":"agent","domain":"survey","subnet_id":"genesis","reward":{"agent_credit":7,"reputation":1,"capacity":0,"treasury_share_credit":0},"payload":{}}`)

	backupDir := filepath.Join(root, "backup")
	r := runCLI(t, nil, "backup", backupDir, "--data-dir", orig)
	if r.code != 0 || !strings.Contains(r.stdout, "backed up "+orig+" to "+backupDir) {
		t.Fatalf("backup of the running node: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"node.key", "control.token", "manifest.json"} {
		fi, err := os.Stat(filepath.Join(backupDir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup's %s: %v %v", f, fi, err)
		}
	}
	ents, _ := os.ReadDir(orig)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "backup.tmp-") {
			t.Fatalf("the snapshot %s was left in the data dir", e.Name())
		}
	}
	bundle := filepath.Join(root, "bundle.json")
	if err := os.WriteFile(bundle, getJSON(t, n.url+"/v1/events/export", n.token, http.StatusOK, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	want := readAnswers(t, n.url, n.token)
	n.stop(t)

	restored := filepath.Join(root, "restored")
	if r := runCLI(t, nil, "restore", backupDir, "--data-dir", restored); r.code != 0 {
		t.Fatalf("restore: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	imported := filepath.Join(root, "imported")
	if r := runCLI(t, nil, "import", bundle, "--key", filepath.Join(orig, "node.key"), "--data-dir", imported); r.code != 0 {
		t.Fatalf("import: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, dir := range []string{restored, imported} {
		m := startNode(t, dir)
		got := readAnswers(t, m.url, m.token)
		for _, path := range answersAt {
			if !bytes.Equal(got[path], want[path]) {
				t.Errorf("%s: %s answers\n%s\nthe original answered\n%s", filepath.Base(dir), path, got[path], want[path])
			}
		}
		postOK(t, m.url, m.token, "/v1/core/missions", `{"title":"After the restore","description":"d","publisher":"ada","publisher_kind":"agent","domain":"survey","subnet_id":"genesis","reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{}}`)
		m.stop(t)
		if out := runCLI(t, nil, "verify", "--data-dir", dir); out.code != 0 {
			t.Fatalf("verify %s after an append: %s%s", dir, out.stdout, out.stderr)
		}
	}
}

// TestRestoreAndImportRefuse: a target that holds anything, a bundle of
// another key and a changed bundle are refused, and a refused import or
// restore leaves no data dir behind.
func TestRestoreAndImportRefuse(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "orig")
	n := startNode(t, orig)
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	bundle := getJSON(t, n.url+"/v1/events/export", n.token, http.StatusOK, nil)
	n.stop(t)
	other := filepath.Join(root, "other")
	startNode(t, other).stop(t)
	backupDir := filepath.Join(root, "backup")
	if r := runCLI(t, nil, "backup", backupDir, "--data-dir", orig); r.code != 0 {
		t.Fatalf("backup of a stopped node: %d %s", r.code, r.stderr)
	}

	if r := runCLI(t, nil, "restore", backupDir, "--data-dir", other); r.code != 1 || !strings.Contains(r.stderr, "is not empty") {
		t.Fatalf("restore over a node: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "backup", backupDir, "--data-dir", orig); r.code != 1 || !strings.Contains(r.stderr, "is not empty") {
		t.Fatalf("backup over a backup: %d %s", r.code, r.stderr)
	}
	file := filepath.Join(root, "bundle.json")
	if err := os.WriteFile(file, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "new")
	r := runCLI(t, nil, "import", file, "--key", filepath.Join(other, "node.key"), "--data-dir", target)
	if r.code != 1 || !strings.Contains(r.stdout, "invalid: broken chain at seq 1") || !strings.Contains(r.stdout, "is not the chain's node") {
		t.Fatalf("import with another key: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("a refused import left %s: %v", target, err)
	}
	changed := bytes.Replace(bundle, []byte(`"Ada Lovelace"`), []byte(`"Ada Lovelacf"`), 1)
	if err := os.WriteFile(file, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "import", file, "--key", filepath.Join(orig, "node.key"), "--data-dir", target)
	if r.code != 1 || !strings.Contains(r.stdout, "invalid: broken chain at seq 2") {
		t.Fatalf("import of a changed bundle: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("a refused import left %s: %v", target, err)
	}
	if err := os.Remove(filepath.Join(backupDir, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "restore", backupDir, "--data-dir", target); r.code != 1 || !strings.Contains(r.stderr, "not a backup") {
		t.Fatalf("restore of a backup without its manifest: %d %s", r.code, r.stderr)
	}
}

// TestRestoreCatchesUpToPublished: a backup restored after the node
// published a later checkpoint is caught up to it from the published tail,
// every event verified; a --published that cannot be read fails the restore.
func TestRestoreCatchesUpToPublished(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "orig")
	startNode(t, orig).stop(t)
	backupDir := filepath.Join(root, "backup")
	if r := runCLI(t, nil, "backup", backupDir, "--data-dir", orig); r.code != 0 {
		t.Fatalf("backup: %s", r.stderr)
	}
	appendNotes(t, orig, 0, 5)
	published := filepath.Join(root, "published")
	if r := runCLI(t, nil, "transparency", "publish", "--dir", published, "--data-dir", orig); r.code != 0 {
		t.Fatalf("publish: %s%s", r.stdout, r.stderr)
	}
	r := runCLI(t, nil, "restore", backupDir, "--data-dir", filepath.Join(root, "restored"), "--published", published)
	if r.code != 0 || !strings.Contains(r.stdout, "caught up 5 events from "+published+": tip seq 6, the published tree of 6 events") {
		t.Fatalf("restore behind the published checkpoint: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "restore", backupDir, "--data-dir", filepath.Join(root, "restored2"), "--published", filepath.Join(root, "nothing"))
	if r.code == 0 {
		t.Fatal("restore with an unreadable --published succeeded")
	}
}

func readAnswers(t *testing.T, url, token string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, path := range answersAt {
		req, err := http.NewRequest(http.MethodGet, url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, body, err)
		}
		if path == "/v1/state" {
			body = withoutProcess(t, body)
		}
		out[path] = body
	}
	return out
}

// withoutProcess drops from a /v1/state answer what belongs to the process,
// not to the chain: the embedded NATS server's id and start time.
func withoutProcess(t *testing.T, body []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if network, ok := v["network"].(map[string]any); ok {
		if nats, ok := network["nats"].(map[string]any); ok {
			delete(nats, "server_id")
			delete(nats, "started")
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func postOK(t *testing.T, url, token, path, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return b
}
