package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mirrorView is the part of a mirror's GET /v1/transparency these tests read.
type mirrorView struct {
	TreeSize  int64 `json:"tree_size"`
	Witnessed *struct {
		TreeSize   int64    `json:"tree_size"`
		Checkpoint string   `json:"checkpoint"`
		Cosigners  []string `json:"cosigners"`
	} `json:"witnessed"`
	Mirror *struct {
		Source         string  `json:"source"`
		State          string  `json:"state"`
		SourceTreeSize int64   `json:"source_tree_size"`
		TreeSize       int64   `json:"tree_size"`
		Behind         int64   `json:"behind"`
		LastError      *string `json:"last_error"`
		Evidence       *string `json:"evidence"`
	} `json:"mirror"`
}

// viewOf is the mirror's GET /v1/transparency; it fails the test when the
// mirror does not answer, which a mirror must always do.
func viewOf(t *testing.T, p *process) mirrorView {
	t.Helper()
	code, _, b := msGet(t, p.url+"/v1/transparency", p.token)
	var v mirrorView
	if code != http.StatusOK || json.Unmarshal(b, &v) != nil || v.Mirror == nil {
		t.Fatalf("the mirror's GET /v1/transparency: %d %s", code, b)
	}
	return v
}

// lagging is a reverse proxy to a witness that holds each request back for
// up to max, as a witness far away or busy answers.
func lagging(t *testing.T, to string, max time.Duration) *httptest.Server {
	t.Helper()
	u, err := url.Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(rand.N(max))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startWithLaggingWitness starts a node in root/a whose one witness, a
// civnode witness in root/witness, answers through a proxy that delays it up
// to 2 s; it returns the node, the witness's verifier key and the node's.
func startWithLaggingWitness(t *testing.T, root string) (a *node, wkey, vkey string) {
	t.Helper()
	w := startNode(t, root+"/witness")
	wkey = verifierKeyOfWitness(t, w)
	w.stop(t)
	a = startNode(t, root+"/a")
	vkey = summaryOf(t, a.url, a.token).VerifierKey
	a.stop(t)
	w = startNodeArgs(t, root+"/witness", "--witness-for", vkey)
	slow := lagging(t, w.url, 2*time.Second)
	return startNodeArgs(t, root+"/a", "--witness", wkey+"@"+slow.URL+"/v1/witness"), wkey, vkey
}

// TestServeMirrorWaitsForWitnesses: a mirror that requires a witness
// (serve --mirror-of --mirror-witness) follows a published directory that
// civnode transparency publish --unwitnessed rewrites right after each of 50
// writes (a publisher that does not wait for the witnesses), while
// the witness, behind a proxy that delays it up to 2 s, has cosigned none of
// those trees yet. The mirror never exits: it says it is retrying, how far
// behind it is and why, and serves what it holds; once the origin's newest
// tree is cosigned and published, the mirror holds it, serves the origin's
// cosignatures as witnessed and on ?witnessed=1, and civnode transparency
// check --witness passes against the mirror. civnode mirror, following
// beside it, waits and catches up the same way.
func TestServeMirrorWaitsForWitnesses(t *testing.T) {
	root := t.TempDir()
	a, wkey, vkey := startWithLaggingWitness(t, root)
	s := newSurvey(t, a.url, a.token)

	pub := filepath.Join(root, "pub")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", root+"/a", "--unwitnessed")
	static := httptest.NewServer(http.FileServer(http.Dir(pub)))
	defer static.Close()
	// Its first seal is not cosigned yet either: the mirror starts and waits.
	p := startProcess(t, filepath.Join(root, "mirror"), "--mirror-of", static.URL, "--mirror-interval", "100ms",
		"--mirror-witness", wkey, "--verifier-key", vkey)
	exited := p.waited
	log := p.stderr.String
	// civnode mirror, following, waits as well.
	cliOut, cliErr := &syncBuffer{}, &syncBuffer{}
	cli := exec.Command(civnodeBin, "mirror", "--from", static.URL, "--data-dir", filepath.Join(root, "cli"),
		"--interval", "100ms", "--witness", wkey, "--verifier-key", vkey)
	cli.Stdout, cli.Stderr = cliOut, cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	cliExited := make(chan struct{})
	go func() { cli.Wait(); close(cliExited) }()
	t.Cleanup(func() {
		cli.Process.Kill()
		<-cliExited
	})
	cliLog := func() string { return "stdout:\n" + cliOut.String() + "stderr:\n" + cliErr.String() }

	for i := range 50 {
		s.publish(fmt.Sprintf("Survey %d", i))
		trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", root+"/a", "--unwitnessed")
		select {
		case <-exited:
			t.Fatalf("the mirror exited after publish %d\n%s", i+1, log())
		case <-cliExited:
			t.Fatalf("civnode mirror exited after publish %d\n%s", i+1, cliLog())
		default:
		}
	}
	waitRetries(t, cliErr.String, cliExited, 0, 1, "not witnessed")
	published := summaryOf(t, a.url, a.token).TreeSize
	var v mirrorView
	waitRunning(t, "the mirror saying it waits for cosignatures", exited, log, func() bool {
		v = viewOf(t, p)
		m := v.Mirror
		return m.State == "retrying" && m.SourceTreeSize == published && m.Behind == published-v.TreeSize && m.Behind > 0 &&
			m.LastError != nil && strings.Contains(*m.LastError, "not witnessed")
	})
	if code, _, b := msGet(t, p.url+"/v1/ready", ""); code != http.StatusOK {
		t.Fatalf("a mirror waiting for cosignatures is still ready: %d %s", code, b)
	}
	if code, _, b := msGet(t, p.url+"/v1/metrics", p.token); code != http.StatusOK ||
		!bytes.Contains(b, []byte("civnode_mirror_following 1\n")) ||
		!bytes.Contains(b, fmt.Appendf(nil, "civnode_mirror_behind_events %d\n", v.Mirror.Behind)) {
		t.Fatalf("the mirror's metrics while it waits (behind %d): %d\n%s", v.Mirror.Behind, code, b)
	}
	if files, _ := filepath.Glob(filepath.Join(root, "mirror", "mirror.evidence-*")); len(files) != 0 {
		t.Fatalf("trees not cosigned yet left evidence: %v", files)
	}

	witnessed := waitWitnessed(t, a.url, a.token)
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", root+"/a", "--unwitnessed")
	waitRunning(t, "the mirror at the newest witnessed tree", exited, log, func() bool {
		v = viewOf(t, p)
		return v.TreeSize == witnessed.TreeSize && v.Witnessed != nil && v.Witnessed.TreeSize == witnessed.TreeSize &&
			v.Mirror.State == "following" && v.Mirror.Behind == 0
	})
	waitRunning(t, "civnode mirror at the newest witnessed tree", cliExited, cliLog, func() bool {
		return strings.Contains(cliOut.String(), fmt.Sprintf("tree size %d,", witnessed.TreeSize))
	})
	if !strings.Contains(v.Witnessed.Checkpoint, "— civnode-witness/") || len(v.Witnessed.Cosigners) != 1 {
		t.Fatalf("the mirror's witnessed checkpoint: %+v", v.Witnessed)
	}
	if got := getText(t, p.url+"/v1/transparency/checkpoint?witnessed=1", p.token); string(got) != v.Witnessed.Checkpoint {
		t.Fatalf("?witnessed=1 on the mirror:\n%s\nwant\n%s", got, v.Witnessed.Checkpoint)
	}
	r := runCLI(t, nil, "transparency", "check", "--addr", p.url, "--token", p.token,
		"--state", filepath.Join(root, "observer.json"), "--witness", wkey, "--quorum", "1")
	if r.code != 0 {
		t.Fatalf("transparency check --witness against the mirror: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Restarted, it serves the cosignatures it kept before its source answers.
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, log())
	}
	static.Close()
	p = startProcess(t, filepath.Join(root, "mirror"), "--mirror-of", static.URL, "--mirror-interval", "100ms",
		"--mirror-witness", wkey)
	if v := viewOf(t, p); v.Witnessed == nil || v.Witnessed.TreeSize != witnessed.TreeSize {
		t.Fatalf("the restarted mirror's witnessed checkpoint: %+v", v.Witnessed)
	}
	p.signal(t, syscall.SIGTERM)
	p.wait(t)
}

// TestServeMirrorStopsOnFork: a source that serves a fork of the chain a
// mirror (serve --mirror-of) followed makes it stop following, with the
// evidence kept; the mirror goes on serving the verified chain read-only,
// /v1/ready answers 503 mirror_stopped, /v1/transparency and the metrics
// say it stopped and where the evidence is.
func TestServeMirrorStopsOnFork(t *testing.T) {
	origin := trStoppedNode(t, 300)
	_, vkey := mrOriginKey(t, origin)
	fork := filepath.Join(t.TempDir(), "fork")
	copyTree(t, origin, fork)
	trAppend(t, origin, "real", 100)
	trAppend(t, fork, "forked", 200)
	pub, forkPub := filepath.Join(t.TempDir(), "pub"), filepath.Join(t.TempDir(), "fork-pub")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)
	trMust(t, "transparency", "publish", "--dir", forkPub, "--data-dir", fork)
	src := newFlakySource(t, pub)
	src.up()

	dir := filepath.Join(t.TempDir(), "mirror")
	p := startProcess(t, dir, "--mirror-of", src.url, "--mirror-interval", "100ms", "--verifier-key", vkey)
	exited, log := p.waited, p.stderr.String
	waitRunning(t, "the catch-up to 400 events", exited, log, func() bool { return viewOf(t, p).TreeSize == 400 })

	src.serve(forkPub)
	var v mirrorView
	waitRunning(t, "the mirror stopping on the fork", exited, log, func() bool {
		v = viewOf(t, p)
		return v.Mirror.State == "stopped"
	})
	requireMirrorEvidence(t, dir, "forked", "")
	if v.Mirror.Evidence == nil || !strings.Contains(*v.Mirror.Evidence, "forked") || v.TreeSize != 400 ||
		v.Mirror.LastError == nil || !strings.Contains(*v.Mirror.LastError, "forked") {
		t.Fatalf("the stopped mirror's status: %+v", *v.Mirror)
	}
	code, _, b := msGet(t, p.url+"/v1/ready", "")
	if code != http.StatusServiceUnavailable || !bytes.Contains(b, []byte(`"reason":"mirror_stopped"`)) {
		t.Fatalf("/v1/ready of a stopped mirror: %d %s", code, b)
	}
	if code, _, b := msGet(t, p.url+"/v1/events?limit=5", p.token); code != http.StatusOK || !bytes.Contains(b, []byte(`"seq":1`)) {
		t.Fatalf("a stopped mirror no longer serves its chain: %d %.300s", code, b)
	}
	if code, _, b := msGet(t, p.url+"/v1/metrics", p.token); code != http.StatusOK || !bytes.Contains(b, []byte("civnode_mirror_following 0\n")) {
		t.Fatalf("the stopped mirror's metrics: %d\n%s", code, b)
	}
	if n := strings.Count(log(), "stopped following the origin on evidence"); n != 1 {
		t.Fatalf("the stop is logged %d times, want once\n%s", n, log())
	}
	// It stays stopped and serving, whatever the source serves next.
	src.serve(pub)
	time.Sleep(300 * time.Millisecond)
	if v := viewOf(t, p); v.Mirror.State != "stopped" || v.TreeSize != 400 {
		t.Fatalf("the stopped mirror followed again: %+v", *v.Mirror)
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM of a stopped mirror: exit %d\n%s", code, log())
	}
}
