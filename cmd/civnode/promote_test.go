package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// standby is an origin node, stopped, whose chain is published, and a
// mirror of it that follows the published directory.
type standby struct {
	origin, published, url, mirror string
}

// newStandby makes a stopped origin of n events, publishes it and mirrors
// the published directory.
func newStandby(t *testing.T, n int) standby {
	t.Helper()
	s := standby{origin: trStoppedNode(t, n), mirror: filepath.Join(t.TempDir(), "mirror")}
	s.published, s.url = mrPublish(t, s.origin)
	s.catchUp(t)
	return s
}

// catchUp publishes the origin again and brings the mirror up to it.
func (s standby) catchUp(t *testing.T) {
	t.Helper()
	trMust(t, "transparency", "publish", "--dir", s.published, "--data-dir", s.origin)
	if out, errOut, code := mrMirror(t, s.url, s.mirror); code != 0 {
		t.Fatalf("mirror --once: %d %s%s", code, out, errOut)
	}
}

// key is the origin's node.key.
func (s standby) key() string { return filepath.Join(s.origin, "node.key") }

// dirFiles lists a data dir's top-level names and sizes, to show it
// unchanged.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() == "db" {
			continue // Pebble's own files change on any open
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %v", e.Name(), fi.Size(), fi.Mode()))
	}
	return out
}

// promoteRefused runs promote, wants exit 1 with want in stderr and the
// mirror's data dir unchanged and still a mirror's.
func promoteRefused(t *testing.T, s standby, want string, args ...string) {
	t.Helper()
	before := dirFiles(t, s.mirror)
	r := runCLI(t, nil, append([]string{"promote", "--data-dir", s.mirror}, args...)...)
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("promote %v: exit %d, want 1 with %q in\n%s%s", args, r.code, want, r.stdout, r.stderr)
	}
	if after := dirFiles(t, s.mirror); !slices.Equal(before, after) {
		t.Fatalf("a refused promote changed the data dir:\nbefore %v\nafter  %v", before, after)
	}
	if !datadir.Dir(s.mirror).IsMirror() {
		t.Fatal("a refused promote left no mirror")
	}
}

// promotedEvents are the node.promoted events of a stopped node's chain.
func promotedEvents(t *testing.T, dir string) []eventlog.Event {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	evs, _, err := l.Query(eventlog.Query{Type: events.TypeNodePromoted, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// requirePromotedChain: the promoted node in dir (stopped) holds node.promoted
// at seq size+1, naming its instance and size, once, and node.started was
// recorded after it; the chain verifies.
func requirePromotedChain(t *testing.T, dir string, size int64) {
	t.Helper()
	instance, err := os.ReadFile(filepath.Join(dir, "instance"))
	if err != nil {
		t.Fatal(err)
	}
	evs := promotedEvents(t, dir)
	if len(evs) != 1 {
		t.Fatalf("%d node.promoted events, want 1", len(evs))
	}
	var p events.NodePromoted
	if err := json.Unmarshal(evs[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != uint64(size)+1 || p.Instance != strings.TrimSpace(string(instance)) || p.TreeSize != size {
		t.Fatalf("node.promoted at seq %d with %+v; want seq %d, instance %s, tree size %d", evs[0].Seq, p, size+1, instance, size)
	}
	started := auditActions(t, dir, "node.started")
	if len(started) == 0 {
		t.Fatal("no node.started")
	}
	var first struct {
		TipSeq uint64 `json:"tip_seq"`
	}
	if err := json.Unmarshal(started[0].Detail, &first); err != nil {
		t.Fatal(err)
	}
	if first.TipSeq != uint64(size)+1 {
		t.Errorf("the first node.started saw tip seq %d, want %d: node.promoted first", first.TipSeq, size+1)
	}
	if r := runCLI(t, nil, "verify", "--data-dir", dir); r.code != 0 {
		t.Fatalf("verify the promoted chain: %d %s%s", r.code, r.stdout, r.stderr)
	}
}

// A mirror is promoted only with the origin's key, only while it holds the
// newest published tree; a node's data dir is no mirror. The promoted data
// dir is the node's: serve appends node.promoted first, then takes writes,
// and the chain verifies.
func TestPromoteStandby(t *testing.T) {
	s := newStandby(t, 20)
	other := trStoppedNode(t, 2)

	if r := runCLI(t, nil, "promote", "--data-dir", s.mirror, "--key", s.key()); r.code != 2 || !strings.Contains(r.stderr, "--no-published") {
		t.Fatalf("promote without --published: exit %d %s", r.code, r.stderr)
	}
	promoteRefused(t, s, "is not the key of", "--key", filepath.Join(other, "node.key"), "--published", s.published)
	trAppend(t, s.origin, "later", 5)
	trMust(t, "transparency", "publish", "--dir", s.published, "--data-dir", s.origin)
	promoteRefused(t, s, "catch the mirror up", "--key", s.key(), "--published", s.published)
	promoteRefused(t, s, "catch the mirror up", "--key", s.key(), "--published", s.url)
	if r := runCLI(t, nil, "promote", "--data-dir", other, "--key", filepath.Join(other, "node.key"), "--no-published"); r.code != 1 || !strings.Contains(r.stderr, "node.key") {
		t.Fatalf("promote a node's data dir: exit %d %s", r.code, r.stderr)
	}

	s.catchUp(t)
	r := runCLI(t, nil, "promote", "--data-dir", s.mirror, "--key", s.key(), "--published", s.published)
	if r.code != 0 || !strings.Contains(r.stdout, "at tree size 25") {
		t.Fatalf("promote: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	dir := datadir.Dir(s.mirror)
	if fi, err := os.Stat(dir.KeyPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("node.key: %v %v, want mode 0600", fi, err)
	}
	if _, err := os.Stat(dir.OriginKeyPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("origin.vkey is still there: %v", err)
	}
	if how, err := dir.Recovered(); err != nil || how != datadir.RecoveredByPromote {
		t.Fatalf("recovered mark %q %v", how, err)
	}
	if r := runCLI(t, nil, "promote", "--data-dir", s.mirror, "--key", s.key(), "--no-published"); r.code != 1 {
		t.Fatalf("promote again: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}

	n := startNodeArgs(t, s.mirror, "--published", s.published)
	postOK(t, n.url, n.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	n.stop(t)
	requirePromotedChain(t, s.mirror, 25)
	if how, err := dir.Recovered(); err != nil || how != "" {
		t.Errorf("after a start with nothing to wait for, the mark is %q %v, want none", how, err)
	}
	// A restart records no second node.promoted.
	startNode(t, s.mirror).stop(t)
	requirePromotedChain(t, s.mirror, 25)

	// An import of the promoted node's chain continues its instance: it is
	// not taken for a node the promotion superseded.
	export := runCLI(t, nil, "export", "--data-dir", s.mirror)
	if export.code != 0 {
		t.Fatalf("export: %s", export.stderr)
	}
	bundle := filepath.Join(t.TempDir(), "bundle.json")
	mustWrite(t, bundle, []byte(export.stdout))
	imported := filepath.Join(t.TempDir(), "imported")
	if r := runCLI(t, nil, "import", bundle, "--key", s.key(), "--data-dir", imported); r.code != 0 {
		t.Fatalf("import: %s%s", r.stdout, r.stderr)
	}
	want, _ := os.ReadFile(filepath.Join(s.mirror, "instance"))
	if got, _ := os.ReadFile(filepath.Join(imported, "instance")); string(got) != string(want) {
		t.Fatalf("the imported instance %q, want the promoted node's %q", got, want)
	}
	in := startNode(t, imported)
	if status, body := writeStatus(t, in); status != 201 && status != 200 {
		t.Fatalf("a write to the imported promoted node: %d %s", status, body)
	}
	in.stop(t)

	// The old primary comes back, told where the new node publishes: it
	// catches up past node.promoted of another instance and appends nothing,
	// then or at any later start.
	trMust(t, "transparency", "publish", "--dir", s.published, "--data-dir", s.mirror)
	for range 2 {
		old := startNodeArgs(t, s.origin, "--published", s.published)
		if status, body := writeStatus(t, old); status != 503 || !strings.Contains(body, "superseded") {
			t.Fatalf("a write to the old primary: %d %s, want 503 superseded", status, body)
		}
		old.stop(t)
	}
}

// A kill at any step of promote leaves the mirror (which follows on) or the
// promoted node; promote run again finishes, and the node appends
// node.promoted once.
func TestPromoteKilledAtEachStep(t *testing.T) {
	s := newStandby(t, 10)
	t.Cleanup(func() { promoteStep = nil })
	for _, step := range []string{"instance", "mark", "key", "origin"} {
		t.Run(step, func(t *testing.T) {
			m := standby{origin: s.origin, published: s.published, url: s.url, mirror: filepath.Join(t.TempDir(), "mirror")}
			m.catchUp(t)
			killed := errors.New("killed at " + step)
			promoteStep = func(at string) error {
				if at == step {
					return killed
				}
				return nil
			}
			r := runCLI(t, nil, "promote", "--data-dir", m.mirror, "--key", m.key(), "--published", m.published)
			promoteStep = nil
			if r.code != 1 || !errors.Is(r.err, killed) {
				t.Fatalf("promote killed at %s: exit %d %v", step, r.code, r.err)
			}
			dir := datadir.Dir(m.mirror)
			if step == "origin" {
				// node.key is in place: the data dir is the node's, and a
				// serve on it is the promoted node's.
				if dir.IsMirror() {
					t.Fatal("node.key written, yet a mirror's data dir")
				}
				startNode(t, m.mirror).stop(t)
			} else {
				if !dir.IsMirror() {
					t.Fatalf("killed before node.key, yet no mirror's data dir")
				}
				if out, errOut, code := mrMirror(t, m.url, m.mirror); code != 0 {
					t.Fatalf("the mirror follows on: %d %s%s", code, out, errOut)
				}
			}
			r = runCLI(t, nil, "promote", "--data-dir", m.mirror, "--key", m.key(), "--published", m.published)
			if r.code != 0 {
				t.Fatalf("promote again: exit %d %s%s", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(dir.OriginKeyPath()); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("origin.vkey is still there: %v", err)
			}
			startNode(t, m.mirror).stop(t)
			requirePromotedChain(t, m.mirror, 10)
		})
	}
}

// A witness of the origin that cosigned a larger tree than the mirror holds
// refuses the promotion, as do too few answers; once the mirror holds the
// newest tree the promotion passes, and the promoted node, started with
// that witness, waits for its word and then appends node.promoted first.
func TestPromoteAsksTheWitnesses(t *testing.T) {
	root := t.TempDir()
	orig, wdir := filepath.Join(root, "origin"), filepath.Join(root, "witness")
	w := startNode(t, wdir)
	wkey := verifierKeyOfWitness(t, w)
	w.stop(t)
	a := startNode(t, orig)
	postOK(t, a.url, a.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	vkey := summaryOf(t, a.url, a.token).VerifierKey
	a.stop(t)
	w = startNodeArgs(t, wdir, "--witness-for", vkey)
	wArg := wkey + "@" + w.url + "/v1/witness"
	a = startNodeArgs(t, orig, "--witness", wArg)
	appendMission(t, a, "before the mirror")
	waitWitnessed(t, a.url, a.token)
	a.stop(t)

	s := standby{origin: orig, mirror: filepath.Join(root, "mirror")}
	s.published, s.url = mrPublish(t, orig)
	s.catchUp(t)
	// The origin goes on, its witness cosigns, nothing is published.
	a = startNodeArgs(t, orig, "--witness", wArg)
	appendMission(t, a, "never published")
	cosigned := waitWitnessed(t, a.url, a.token).TreeSize
	a.stop(t)
	promoteRefused(t, s, fmt.Sprintf("holds a tree of %d events", cosigned), "--key", s.key(), "--published", s.published, "--witness", wArg)
	promoteRefused(t, s, "0 of the 1 witnesses answered", "--key", s.key(), "--published", s.published, "--witness", wkey+"@http://127.0.0.1:1/v1/witness")

	s.catchUp(t)
	l := openTestLog(t, s.mirror)
	size := l.TreeSize()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if size < cosigned {
		t.Fatalf("the mirror holds %d events, the witness cosigned %d", size, cosigned)
	}
	r := runCLI(t, nil, "promote", "--data-dir", s.mirror, "--key", s.key(), "--published", s.published, "--witness", wArg)
	if r.code != 0 || !strings.Contains(r.stdout, "holds no larger tree") {
		t.Fatalf("promote: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	n := startNodeArgs(t, s.mirror, "--witness", wArg, "--published", s.published)
	waitFor(t, "the promoted node writable", func() (bool, string) {
		status, body := writeStatus(t, n)
		return status == 201 || status == 200, fmt.Sprintf("%d %s", status, body)
	})
	n.stop(t)
	requirePromotedChain(t, s.mirror, size)
}

// A running mirror is not promoted; --no-published promotes without a
// published checkpoint, and says what that risks.
func TestPromoteNoPublishedWarns(t *testing.T) {
	s := newStandby(t, 3)
	running := startNodeArgs(t, s.mirror, "--mirror-of", s.url)
	promoteRefused(t, s, "in use", "--key", s.key(), "--no-published")
	running.stop(t)
	r := runCLI(t, nil, "promote", "--data-dir", s.mirror, "--key", s.key(), "--no-published")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: the mirror (3 events) was not compared") {
		t.Fatalf("promote --no-published: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "promote", "--data-dir", s.mirror, "--key", s.key(), "--published", s.published, "--no-published"); r.code != 2 {
		t.Fatalf("--published with --no-published: exit %d, want 2", r.code)
	}
}
