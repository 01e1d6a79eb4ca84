package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// witnessedBackup is a node whose backup is behind the tree its witness
// cosigned.
type witnessedBackup struct {
	root, orig, backup string
	w                  *node
	wdir, witnessArg   string
	published          string
	cosigned           int64
}

func newWitnessedBackup(t *testing.T) witnessedBackup {
	t.Helper()
	root := t.TempDir()
	g := witnessedBackup{root: root, orig: filepath.Join(root, "a"), backup: filepath.Join(root, "backup"), wdir: filepath.Join(root, "witness")}
	w := startNode(t, g.wdir)
	wkey := verifierKeyOfWitness(t, w)
	w.stop(t)
	a := startNode(t, g.orig)
	postOK(t, a.url, a.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	vkey := summaryOf(t, a.url, a.token).VerifierKey
	a.stop(t)
	if r := runCLI(t, nil, "backup", g.backup, "--data-dir", g.orig); r.code != 0 {
		t.Fatalf("backup: %s", r.stderr)
	}
	g.w = startNodeArgs(t, g.wdir, "--witness-for", vkey)
	g.witnessArg = wkey + "@" + g.w.url + "/v1/witness"
	a = startNodeArgs(t, g.orig, "--witness", g.witnessArg)
	appendMission(t, a, "after the backup")
	g.cosigned = waitWitnessed(t, a.url, a.token).TreeSize
	a.stop(t)
	g.published = filepath.Join(root, "published")
	if r := runCLI(t, nil, "transparency", "publish", "--dir", g.published, "--data-dir", g.orig); r.code != 0 {
		t.Fatalf("publish: %s%s", r.stdout, r.stderr)
	}
	return g
}

// writeStatus posts a mission and returns the status and body.
func writeStatus(t *testing.T, n *node) (int, string) {
	t.Helper()
	status, body, err := postStatus(httpClient, n.url+"/v1/core/missions", n.token, []byte(guardMission))
	if err != nil {
		t.Fatal(err)
	}
	return status, string(body)
}

// A data dir made by restore, behind what its witness cosigned, appends
// nothing while the witness says so; while the witness cannot be reached it
// waits, however long, read-only. A node that was not restored waits for
// an unreachable witness only --witness-start-wait, then appends and says
// so.
func TestRecoveredWaitsForItsWitnesses(t *testing.T) {
	g := newWitnessedBackup(t)

	restored := filepath.Join(g.root, "restored")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", restored); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	n := startNodeArgs(t, restored, "--witness", g.witnessArg)
	if status, body := writeStatus(t, n); status != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"behind"`) || !strings.Contains(body, "witness ") {
		t.Fatalf("a restored node behind its witness: %d %s", status, body)
	}
	n.stop(t)
	// Given where the chain is published too, it catches up, the witness
	// answers that it is not behind, and it appends after the witnessed tree.
	n = startNodeArgs(t, restored, "--witness", g.witnessArg, "--published", g.published)
	if status, body := writeStatus(t, n); status != http.StatusOK {
		t.Fatalf("a restored node caught up from its published tail, its witness up: %d %s", status, body)
	}
	n.stop(t)
	assertExtendsPublished(t, restored, g.published)
	if got := int64(openTipSeq(t, restored)); got <= g.cosigned {
		t.Fatalf("the caught-up node's tip %d is not past the witnessed tree of %d", got, g.cosigned)
	}

	g.w.stop(t) // the witness is down from here on
	restored = filepath.Join(g.root, "restored-again")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", restored); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	n = startNodeArgs(t, restored, "--witness", g.witnessArg, "--witness-start-wait", "200ms")
	time.Sleep(time.Second)
	if status, body := writeStatus(t, n); status != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"waiting"`) {
		t.Fatalf("a restored node whose witness is down, past --witness-start-wait: %d %s", status, body)
	}
	n.stop(t)

	// The original node, not restored, with its witness down.
	a := startNodeArgs(t, g.orig, "--witness", g.witnessArg, "--witness-start-wait", "500ms")
	waitFor(t, "the node appends once --witness-start-wait is over", func() (bool, string) {
		status, body := writeStatus(t, a)
		return status == http.StatusOK, body
	})
	if fg := transparencyGuard(t, a); fg["writable"] != true || !strings.Contains(fg["note"].(string), "without word from") {
		t.Errorf("fork_guard after the wait: %v", fg)
	}
}

// A witness cosigned a tree whose bundles were published but whose
// checkpoint and seal were not yet (a publisher killed between the two): a
// restored node fetches that tail from the bundles beyond the seal, every
// event checked against the node's key, and appends once the witness
// cosigns the very tree it holds.
func TestRestoredCatchesUpTheWitnessedTail(t *testing.T) {
	g := newWitnessedBackup(t)
	// The published directory as a publisher killed mid-way leaves it: the
	// checkpoint and seal of the backup's tree, the bundles and tiles of the
	// witnessed one.
	early := filepath.Join(g.root, "early")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", early); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	pub := filepath.Join(g.root, "killed-publisher")
	if r := runCLI(t, nil, "transparency", "publish", "--dir", pub, "--data-dir", early); r.code != 0 {
		t.Fatalf("publish: %s%s", r.stdout, r.stderr)
	}
	kept := map[string][]byte{}
	for _, f := range []string{"checkpoint", "seal"} {
		b, err := os.ReadFile(filepath.Join(pub, f))
		if err != nil {
			t.Fatal(err)
		}
		kept[f] = b
	}
	if r := runCLI(t, nil, "transparency", "publish", "--dir", pub, "--data-dir", g.orig); r.code != 0 {
		t.Fatalf("publish: %s%s", r.stdout, r.stderr)
	}
	for f, b := range kept {
		if err := os.WriteFile(filepath.Join(pub, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	backupTip := openTipSeq(t, early)

	restored := filepath.Join(g.root, "restored")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", restored); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	n := startNodeArgs(t, restored, "--witness", g.witnessArg, "--published", pub)
	waitFor(t, "the restored node appends", func() (bool, string) {
		status, body := writeStatus(t, n)
		return status == http.StatusOK, body
	})
	n.stop(t)
	if got := int64(openTipSeq(t, restored)); got != g.cosigned+1 || uint64(g.cosigned) <= backupTip {
		t.Fatalf("tip %d after one write, want the witnessed %d + 1 (the backup had %d)", got, g.cosigned, backupTip)
	}
}
