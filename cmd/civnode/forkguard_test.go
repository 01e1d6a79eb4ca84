package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/transparency"
)

// guardNode is a node with one identity, backed up, that then appended and
// published more: the state a restore from an older backup meets.
type guardNode struct {
	root, orig, backup, published string
}

// newGuardNode makes a node, backs it up, appends behind notes, and
// publishes its chain (transparency publish --dir).
func newGuardNode(t *testing.T, behind int) guardNode {
	t.Helper()
	root := t.TempDir()
	g := guardNode{root: root, orig: filepath.Join(root, "orig"), backup: filepath.Join(root, "backup"), published: filepath.Join(root, "published")}
	n := startNode(t, g.orig)
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	n.stop(t)
	if r := runCLI(t, nil, "backup", g.backup, "--data-dir", g.orig); r.code != 0 {
		t.Fatalf("backup: %s", r.stderr)
	}
	if behind > 0 {
		appendNotes(t, g.orig, 0, behind)
	}
	if r := runCLI(t, nil, "transparency", "publish", "--dir", g.published, "--data-dir", g.orig); r.code != 0 {
		t.Fatalf("publish: %s%s", r.stdout, r.stderr)
	}
	return g
}

// guardPublishedSize is the tree size of the checkpoint published in dir.
func guardPublishedSize(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, transparency.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	if _, err := fmt.Sscanf(strings.Split(string(b), "\n")[1], "%d", &size); err != nil {
		t.Fatalf("the published checkpoint %q: %v", b, err)
	}
	return size
}

// assertExtendsPublished requires the stopped node of dir to hold the
// published tree: the same root at its size, so no event it signed at a
// published seq differs from the published one.
func assertExtendsPublished(t *testing.T, dir, published string) {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	size, behind, err := transparency.Behind(context.Background(), l, published)
	if err != nil || behind != 0 {
		t.Fatalf("the node of %s against the published tree of %d events: behind %d, %v", dir, size, behind, err)
	}
}

const guardMission = `{"title":"After the restore","description":"d","publisher":"ada","publisher_kind":"agent","domain":"survey","subnet_id":"genesis","reward":{"agent_credit":1,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{}}`

// Restores from backups 0, 1 and 300 events behind the published tree, with
// and without restore --published, and the node then started with its
// --published source: the restored node catches up before its first write,
// and never signs a second event at a published seq.
func TestRestoreNeverForksThePublishedChain(t *testing.T) {
	for _, behind := range []int{0, 1, 300} {
		g := newGuardNode(t, behind)
		size := guardPublishedSize(t, g.published)
		t.Run(fmt.Sprintf("%d behind, restore --published", behind), func(t *testing.T) {
			dir := filepath.Join(g.root, "restored-published")
			r := runCLI(t, nil, "restore", g.backup, "--data-dir", dir, "--published", g.published)
			want := fmt.Sprintf("caught up %d events from %s", behind, g.published)
			if behind == 0 {
				want = fmt.Sprintf("published checkpoint at size %d: covered by this chain", size)
			}
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Fatalf("restore --published: %d, want %q in\n%s%s", r.code, want, r.stdout, r.stderr)
			}
			if got := int64(openTipSeq(t, dir)); got != size {
				t.Fatalf("restored to seq %d, the published tree has %d", got, size)
			}
			n := startNodeArgs(t, dir, "--published", g.published)
			postOK(t, n.url, n.token, "/v1/core/missions", guardMission)
			n.stop(t)
			assertExtendsPublished(t, dir, g.published)
		})
		t.Run(fmt.Sprintf("%d behind, serve --published", behind), func(t *testing.T) {
			dir := filepath.Join(g.root, "restored")
			r := runCLI(t, nil, "restore", g.backup, "--data-dir", dir)
			if r.code != 0 || !strings.Contains(r.stderr, "cannot know whether observers saw later events") {
				t.Fatalf("restore without --published: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			n := startNodeArgs(t, dir, "--published", g.published)
			postOK(t, n.url, n.token, "/v1/core/missions", guardMission)
			n.stop(t)
			assertExtendsPublished(t, dir, g.published)
			if _, err := os.Stat(filepath.Join(dir, "recovered")); !os.IsNotExist(err) {
				t.Errorf("the recovered mark outlived the guard's check: %v", err)
			}
		})
		t.Run(fmt.Sprintf("%d behind, serve --publish-dir", behind), func(t *testing.T) {
			// The node publishes where it published before: that directory,
			// holding a checkpoint, is a source the node catches up from
			// before it appends, and then publishes on.
			pub := filepath.Join(g.root, fmt.Sprintf("publish-dir-%d", behind))
			if err := os.CopyFS(pub, os.DirFS(g.published)); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(g.root, "restored-publish-dir")
			if r := runCLI(t, nil, "restore", g.backup, "--data-dir", dir); r.code != 0 {
				t.Fatalf("restore: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			n := startNodeArgs(t, dir, "--publish-dir", pub, "--publish-interval", "50ms")
			postOK(t, n.url, n.token, "/v1/core/missions", guardMission)
			n.stop(t)
			assertExtendsPublished(t, dir, g.published)
			assertExtendsPublished(t, dir, pub)
			if got := guardPublishedSize(t, pub); got <= size {
				t.Errorf("the node published a tree of %d after its write, the old one had %d", got, size)
			}
		})
	}
}

// transparencyGuard reads /v1/transparency's fork_guard.
func transparencyGuard(t *testing.T, n *node) map[string]any {
	t.Helper()
	var tr struct {
		ForkGuard map[string]any `json:"fork_guard"`
	}
	getJSON(t, n.url+"/v1/transparency", n.token, http.StatusOK, &tr)
	return tr.ForkGuard
}

// A published directory that forks the local chain, and one of another key:
// the node starts read-only, every write answers 503 behind_published,
// /v1/ready says why, the evidence is kept, and nothing is stored.
func TestPublishedForkHoldsTheNode(t *testing.T) {
	g := newGuardNode(t, 5)
	forked := filepath.Join(g.root, "forked")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", forked); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	// Without a source the restored node cannot know, and signs other
	// events at the published seqs: the fork the guard exists to stop.
	common := openTipSeq(t, forked)
	n := startNode(t, forked)
	postOK(t, n.url, n.token, "/v1/core/missions", guardMission)
	n.stop(t)
	before := openTipSeq(t, forked)

	other := filepath.Join(g.root, "other")
	startNode(t, other).stop(t)
	otherPub := filepath.Join(g.root, "other-published")
	if r := runCLI(t, nil, "transparency", "publish", "--dir", otherPub, "--data-dir", other); r.code != 0 {
		t.Fatalf("publish: %s", r.stderr)
	}

	for name, pub := range map[string]string{"fork": g.published, "another key": otherPub} {
		t.Run(name, func(t *testing.T) {
			n := startNodeArgs(t, forked, "--published", pub)
			status, body, err := postStatus(httpClient, n.url+"/v1/core/missions", n.token, []byte(guardMission))
			if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"code":"behind_published"`) {
				t.Fatalf("a write on a forked node: %d %s %v", status, body, err)
			}
			resp, err := httpClient.Get(n.url + "/v1/ready")
			if err != nil {
				t.Fatal(err)
			}
			var ready map[string]any
			json.NewDecoder(resp.Body).Decode(&ready)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || ready["reason"] != "behind_published" {
				t.Errorf("ready on a forked node: %d %v", resp.StatusCode, ready)
			}
			fg := transparencyGuard(t, n)
			if fg["writable"] != false || fg["reason"] != "forked" {
				t.Errorf("fork_guard: %v", fg)
			}
			if note, _ := fg["note"].(string); name == "fork" && !strings.Contains(note, fmt.Sprintf("the first event that differs is seq %d", common+1)) {
				t.Errorf("the fork_guard's note does not name seq %d: %q", common+1, note)
			}
			n.stop(t)
			if got := openTipSeq(t, forked); got != before {
				t.Errorf("a held node stored events: tip %d, was %d", got, before)
			}
		})
	}
	if ev, _ := filepath.Glob(filepath.Join(forked, "mirror.evidence-*")); len(ev) == 0 {
		t.Error("no evidence kept of the fork")
	}
}

// A publish target that comes to hold what the chain does not extend (here
// another node's checkpoint, written there while the node runs) stops the
// publishing and holds the node's writes: a second writer, or a target two
// nodes share, is a fork in the making.
func TestPublishRefusedHoldsTheNode(t *testing.T) {
	root := t.TempDir()
	pub := filepath.Join(root, "pub")
	n := startNodeArgs(t, filepath.Join(root, "node"), "--publish-dir", pub, "--publish-interval", "50ms")
	waitFor(t, "the first publish", func() (bool, string) {
		_, err := os.Stat(filepath.Join(pub, transparency.CheckpointFile))
		return err == nil, fmt.Sprint(err)
	})
	other := filepath.Join(root, "other")
	startNode(t, other).stop(t)
	otherPub := filepath.Join(root, "other-pub")
	if r := runCLI(t, nil, "transparency", "publish", "--dir", otherPub, "--data-dir", other); r.code != 0 {
		t.Fatalf("publish: %s", r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(otherPub, transparency.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pub, transparency.CheckpointFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A write makes the next publish run, which meets the other checkpoint.
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	waitFor(t, "the node holds its writes", func() (bool, string) {
		fg := transparencyGuard(t, n)
		return fg["writable"] == false && fg["reason"] == "forked", fmt.Sprint(fg)
	})
	status, body, err := postStatus(httpClient, n.url+"/v1/core/missions", n.token, []byte(guardMission))
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("a write after the target refused the chain: %d %s %v", status, body, err)
	}
	if got, _ := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile)); string(got) != string(b) {
		t.Error("the refused target was overwritten")
	}
}

// A published directory rolled back to an older copy of the chain (its tree
// a prefix of the node's) is behind the node, not ahead: the node keeps its
// whole chain and appends. One rolled back to another history of a smaller
// size holds it, as a fork does.
func TestPublishedRollbackOfTheSameChain(t *testing.T) {
	g := newGuardNode(t, 5)
	older := filepath.Join(g.root, "older")
	// The published directory as it was at the backup's tree.
	early := filepath.Join(g.root, "early")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", early); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	if r := runCLI(t, nil, "transparency", "publish", "--dir", older, "--data-dir", early); r.code != 0 {
		t.Fatalf("publish: %s", r.stderr)
	}
	tip := openTipSeq(t, g.orig)
	n := startNodeArgs(t, g.orig, "--published", older)
	postOK(t, n.url, n.token, "/v1/core/missions", guardMission)
	n.stop(t)
	if got := openTipSeq(t, g.orig); got != tip+1 {
		t.Fatalf("tip %d after one write, was %d", got, tip)
	}

	// The backup's copy, forked by one write, then published: a smaller
	// tree that is not a prefix of the node's chain.
	n = startNode(t, early)
	postOK(t, n.url, n.token, "/v1/core/missions", guardMission)
	n.stop(t)
	forkedPub := filepath.Join(g.root, "forked-older")
	if r := runCLI(t, nil, "transparency", "publish", "--dir", forkedPub, "--data-dir", early); r.code != 0 {
		t.Fatalf("publish: %s", r.stderr)
	}
	n = startNodeArgs(t, g.orig, "--published", forkedPub)
	if status, body, err := postStatus(httpClient, n.url+"/v1/core/missions", n.token, []byte(guardMission)); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("a write beside a smaller published fork: %d %s %v", status, body, err)
	}
	if fg := transparencyGuard(t, n); fg["reason"] != "forked" || !strings.Contains(fg["note"].(string), "the first event that differs is seq") {
		t.Errorf("fork_guard: %v", fg)
	}
	n.stop(t)
}

// A restored data dir told where its chain is published waits, read-only,
// until it can read it, however long: what it lacks is there. A node that
// was not restored goes on after --witness-start-wait.
func TestRestoredWaitsForItsPublishedSource(t *testing.T) {
	g := newGuardNode(t, 3)
	dir := filepath.Join(g.root, "restored")
	if r := runCLI(t, nil, "restore", g.backup, "--data-dir", dir); r.code != 0 {
		t.Fatalf("restore: %s", r.stderr)
	}
	gone := "http://" + freeLoopbackAddr(t)
	n := startNodeArgs(t, dir, "--published", gone, "--witness-start-wait", "200ms")
	time.Sleep(time.Second)
	status, body, err := postStatus(httpClient, n.url+"/v1/core/missions", n.token, []byte(guardMission))
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"reason":"waiting"`) {
		t.Fatalf("a restored node whose published source cannot be read: %d %s %v", status, body, err)
	}
	n.stop(t)

	n = startNodeArgs(t, g.orig, "--published", gone, "--witness-start-wait", "200ms")
	waitFor(t, "the node that was not restored appends", func() (bool, string) {
		status, body, err := postStatus(httpClient, n.url+"/v1/core/missions", n.token, []byte(guardMission))
		return err == nil && status == http.StatusOK, fmt.Sprint(status, string(body), err)
	})
	n.stop(t)
}
