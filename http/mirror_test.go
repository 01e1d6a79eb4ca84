package http

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/witness"
)

// fakeMirror is a mirror's follower whose status a test sets.
type fakeMirror struct {
	mu sync.Mutex
	st MirrorStatus
	w  *witness.Witnessed
}

func (f *fakeMirror) MirrorStatus() MirrorStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeMirror) Witnessed() *witness.Witnessed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w
}

func (f *fakeMirror) set(st MirrorStatus, w *witness.Witnessed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st, f.w = st, w
}

// TestMirrorStatusServed: a server with a Mirror shows its status under
// "mirror" in GET /v1/transparency, serves its witnessed checkpoint as
// witnessed and on ?witnessed=1 (404 not_witnessed while it has none), stays
// ready while the mirror retries and answers 503 mirror_stopped once it
// stopped, and reports it in civnode_mirror_* series that promtool accepts.
func TestMirrorStatusServed(t *testing.T) {
	f := &fakeMirror{}
	errText := "not witnessed: 0 of 1 cosignatures"
	f.set(MirrorStatus{Source: "http://cdn.example/log", State: MirrorRetrying, SourceTreeSize: 9, TreeSize: 4, Behind: 5,
		FailedAttempts: 2, LastError: &errText}, nil)
	m := NewMetrics()
	n := newTestNodeWith(t, func(o *Options) { o.Mirror, o.Metrics = f, m }, nil)

	var sum struct {
		Witnessed *witness.Witnessed `json:"witnessed"`
		Mirror    *MirrorStatus      `json:"mirror"`
	}
	n.get("/v1/transparency").decode(t, &sum)
	if sum.Mirror == nil || sum.Mirror.State != MirrorRetrying || sum.Mirror.Behind != 5 || sum.Mirror.LastError == nil ||
		*sum.Mirror.LastError != errText || sum.Mirror.Evidence != nil || sum.Witnessed != nil {
		t.Fatalf("GET /v1/transparency of a retrying mirror: %+v %+v", sum.Mirror, sum.Witnessed)
	}
	r := n.get("/v1/transparency/checkpoint?witnessed=1")
	r.wantError(t, http.StatusNotFound, codeNotWitnessed, "")
	if !strings.Contains(string(r.body), "mirror") {
		t.Fatalf("?witnessed=1 on a mirror without one: %s", r.body)
	}
	if r := n.request(http.MethodGet, "/v1/ready", "", nil); r.status != http.StatusOK {
		t.Fatalf("a retrying mirror is ready: %d %s", r.status, r.body)
	}
	fams, _ := scrape(t, n, testToken)
	for name, want := range map[string]float64{"civnode_mirror_following": 1, "civnode_mirror_behind_events": 5,
		"civnode_mirror_source_tree_size": 9, "civnode_mirror_failed_attempts": 2} {
		if got := sample(t, fams, name, nil).GetGauge().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	w := &witness.Witnessed{TreeSize: 4, Checkpoint: "origin\n4\nroot\n\n— origin sig\n— witness cosig\n", Cosigners: []string{"witness"}}
	evidence := "/srv/mirror/mirror.evidence-20261129T000000Z-forked.json"
	f.set(MirrorStatus{Source: "http://cdn.example/log", State: MirrorStopped, SourceTreeSize: 9, TreeSize: 4, Behind: 5,
		FailedAttempts: 3, LastError: &errText, Evidence: &evidence}, w)
	n.get("/v1/transparency").decode(t, &sum)
	if sum.Mirror.State != MirrorStopped || sum.Mirror.Evidence == nil || *sum.Mirror.Evidence != evidence ||
		sum.Witnessed == nil || sum.Witnessed.Checkpoint != w.Checkpoint {
		t.Fatalf("GET /v1/transparency of a stopped mirror: %+v %+v", sum.Mirror, sum.Witnessed)
	}
	if r := n.get("/v1/transparency/checkpoint?witnessed=1"); r.status != http.StatusOK || string(r.body) != w.Checkpoint {
		t.Fatalf("?witnessed=1 on a mirror: %d %q", r.status, r.body)
	}
	r = n.request(http.MethodGet, "/v1/ready", "", nil)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), `"reason":"mirror_stopped"`) {
		t.Fatalf("a stopped mirror's readiness: %d %s", r.status, r.body)
	}
	fams, _ = scrape(t, n, testToken)
	if got := sample(t, fams, "civnode_mirror_following", nil).GetGauge().GetValue(); got != 0 {
		t.Fatalf("civnode_mirror_following of a stopped mirror: %v", got)
	}
}

// TestNoMirrorStatusOnANode: a node of its own chain has no mirror object
// and no civnode_mirror_* series.
func TestNoMirrorStatusOnANode(t *testing.T) {
	m := NewMetrics()
	n := newTestNodeWith(t, func(o *Options) { o.Metrics = m }, nil)
	if r := n.get("/v1/transparency"); bytes.Contains(r.body, []byte(`"mirror"`)) {
		t.Fatalf("a node's GET /v1/transparency has a mirror object: %s", r.body)
	}
	if _, body := scrape(t, n, testToken); bytes.Contains(body, []byte("civnode_mirror_")) {
		t.Fatal("a node reports civnode_mirror_ series")
	}
}

// TestMirrorMetricsPromtool: promtool check metrics accepts a mirror's
// scrape, its civnode_mirror_* series included.
func TestMirrorMetricsPromtool(t *testing.T) {
	promtool := testtool.Need(t, "promtool", "install Debian's prometheus package (apt-get install prometheus)")
	m := NewMetrics()
	n := newTestNodeWith(t, func(o *Options) {
		o.Mirror, o.Metrics = &fakeMirror{st: MirrorStatus{State: MirrorFollowing, SourceTreeSize: 3, TreeSize: 3}}, m
	}, nil)
	_, body := scrape(t, n, testToken)
	if !bytes.Contains(body, []byte("civnode_mirror_behind_events 0\n")) {
		t.Fatalf("no civnode_mirror_behind_events in the scrape:\n%s", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
