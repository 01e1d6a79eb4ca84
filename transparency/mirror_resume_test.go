package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// countingDir serves a publish directory as a static web server would and
// records the event bundles asked for.
type countingDir struct {
	files http.Handler
	mu    sync.Mutex
	asked []string
}

func (d *countingDir) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/events/") {
		d.mu.Lock()
		d.asked = append(d.asked, strings.TrimPrefix(r.URL.Path, "/"))
		d.mu.Unlock()
	}
	d.files.ServeHTTP(w, r)
}

// take returns the bundles asked for since the last take.
func (d *countingDir) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.asked
	d.asked = nil
	return out
}

// serveCounting serves dir, counting the bundles asked for, and returns an
// observer's client of it.
func serveCounting(t *testing.T, dir string) (*Client, *countingDir) {
	t.Helper()
	d := &countingDir{files: http.FileServer(http.Dir(dir))}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	c, err := NewObserverClient(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, d
}

// openMirrorLog opens a mirror's log of the chain of pub in dir: the origin's
// public key and no private key.
func openMirrorLog(t *testing.T, dir string, pub ed25519.PublicKey) *eventlog.Log {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{Dir: dir, PublicKey: pub, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// rawChain is every event of l as stored.
func rawChain(t *testing.T, l *eventlog.Log) [][]byte {
	t.Helper()
	var out [][]byte
	err := l.ScanRaw(context.Background(), 1, l.Tip().Seq, func(_ uint64, raw []byte) error {
		out = append(out, bytes.Clone(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// requireSameChain: the mirror holds exactly the origin's first n events,
// byte for byte.
func requireSameChain(t *testing.T, origin, mirror *eventlog.Log, n int) {
	t.Helper()
	want, got := rawChain(t, origin)[:n], rawChain(t, mirror)
	if len(got) != n {
		t.Fatalf("the mirror holds %d events, want the origin's %d", len(got), n)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs:\nmirror %s\norigin %s", i+1, got[i], want[i])
		}
	}
}

// TestMirrorResumes: a mirror stopped part way through its catch-up of a
// published directory keeps the groups it stored and no seal; a source that
// does not hold those events (a fork of the origin) is refused without a
// store; reopened, the mirror resumes from its stored tip, asking for no
// bundle before the one that holds it, through a tree that grew meanwhile,
// and ends holding the origin's chain byte for byte with the origin's seal,
// after which a run finds nothing new.
func TestMirrorResumes(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	origin := newStore(t, key, 1000)
	fork := origin.copy(t)
	origin.add(t, "more", 9000) // 10,000: three groups
	fork.add(t, "fork", 9000)
	pub, forkPub := filepath.Join(t.TempDir(), "log"), filepath.Join(t.TempDir(), "fork")
	origin.publish(t, pub)
	fork.publish(t, forkPub)
	source, served := serveCounting(t, pub)
	k, err := ParseKey(origin.l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "db")
	opts := MirrorOptions{URL: source.Base(), Evidence: filepath.Join(dir, "mirror")}

	// Stopped once its first group is stored.
	m := openMirrorLog(t, db, k.PublicKey())
	stop, cancel := context.WithCancel(ctx)
	cut := opts
	cut.Progress = func(uint64) { cancel() }
	rep, err := Mirror(stop, source, m, cut)
	cancel()
	tip := int64(m.Tip().Seq)
	if !errors.Is(err, context.Canceled) || tip == 0 || tip >= 10_000 || rep.Events != uint64(tip) {
		t.Fatalf("mirror stopped part way: %+v %v, holding %d events", rep, err, tip)
	}
	if _, _, err := m.TreeCheckpoint(); !errors.Is(err, eventlog.ErrNotFound) {
		t.Fatalf("a mirror stopped part way holds a checkpoint: %v", err)
	}
	requireSameChain(t, origin.l, m, int(tip))
	t.Logf("stopped holding %d of 10,000 events", tip)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	served.take()

	// The events it stored are not in a fork's tree, though the fork is
	// signed by the same key and extends nothing the mirror holds a seal of.
	m = openMirrorLog(t, db, k.PublicKey())
	forkSource, _ := serveCounting(t, forkPub)
	rep, err = Mirror(ctx, forkSource, m, MirrorOptions{URL: forkSource.Base(), Evidence: opts.Evidence})
	if !errors.Is(err, ErrForked) || rep.Result != "forked" || rep.Events != 0 ||
		!strings.Contains(err.Error(), "does not hold the") {
		t.Fatalf("resume from a fork: %+v %v", rep, err)
	}
	if files, _ := filepath.Glob(opts.Evidence + ".evidence-*-forked.json"); len(files) != 1 {
		t.Fatalf("evidence of the fork: %v", files)
	}
	if int64(m.Tip().Seq) != tip {
		t.Fatalf("the refused fork moved the mirror from %d to %d events", tip, m.Tip().Seq)
	}

	// The origin grew while the mirror was stopped.
	origin.add(t, "later", 500)
	origin.publish(t, pub)
	rep, err = Mirror(ctx, source, m, opts)
	if err != nil || rep.Result != "extended" || rep.Old.Size != 0 || rep.Head.Size != 10_500 || rep.Events != uint64(10_500-tip) {
		t.Fatalf("resumed mirror: %+v %v, from %d events", rep, err, tip)
	}
	asked := served.take()
	slices.Sort(asked)
	if first := BundlePath(tip/BundleSize, BundleSize); len(asked) == 0 || asked[0] < first {
		t.Errorf("the resumed mirror asked for %v, none before %s", asked, first)
	}
	requireSameChain(t, origin.l, m, 10_500)
	seal, err := m.Seal()
	b, _ := os.ReadFile(filepath.Join(pub, SealFile))
	want, werr := eventlog.ParseSeal(b)
	if err != nil || werr != nil || seal != want || seal.EventCount != 10_500 {
		t.Fatalf("the mirror's seal %+v (%v), want the origin's published one %+v (%v)", seal, err, want, werr)
	}

	rep, err = Mirror(ctx, source, m, opts)
	if err != nil || rep.Result != "unchanged" || rep.Events != 0 || len(served.take()) != 0 {
		t.Fatalf("mirror with nothing new: %+v %v", rep, err)
	}
}
