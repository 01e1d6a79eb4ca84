package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/witness"
	"github.com/civnode/civnode/witness/witnesstest"
)

// fakeWitness is a C2SP tlog-witness in the test process, answering with a
// witness.Witness that exists only once the log's key is known (503 before).
type fakeWitness struct {
	name string
	key  ed25519.PrivateKey
	now  func() time.Time // the witness's clock; nil is time.Now
	w    atomic.Pointer[witness.Witness]
}

func newFakeWitness(name string, seed byte, now func() time.Time) *fakeWitness {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed
	}
	return &fakeWitness{name: name, key: ed25519.NewKeyFromSeed(s), now: now}
}

func (f *fakeWitness) verifierKey() string {
	return witness.CosignatureVerifierKey(f.name, f.key.Public().(ed25519.PublicKey))
}

// witnessLog makes the witness witness the log with the note verifier key
// logKey, its state in dir.
func (f *fakeWitness) witnessLog(t *testing.T, dir, logKey string) {
	t.Helper()
	opts := witness.Options{Key: f.key, Name: f.name, Logs: []string{logKey},
		StatePath: filepath.Join(dir, strings.ReplaceAll(f.name, "/", "_")+".json")}
	if f.now != nil {
		opts.Cosigner = witnesstest.NewDatedCosigner(f.name, f.key, f.now)
	}
	w, err := witness.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.w.Store(w)
}

func (f *fakeWitness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := f.w.Load()
	body, _ := io.ReadAll(r.Body)
	if w == nil || !strings.HasSuffix(r.URL.Path, "/add-checkpoint") {
		http.Error(rw, "not ready", http.StatusServiceUnavailable)
		return
	}
	c, err := w.AddCheckpoint(body)
	var re *witness.RequestError
	switch {
	case errors.As(err, &re) && re.Status == http.StatusConflict:
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		io.WriteString(rw, strconv.FormatInt(re.Size, 10)+"\n")
	case errors.As(err, &re):
		http.Error(rw, re.Msg, re.Status)
	case err != nil:
		http.Error(rw, err.Error(), http.StatusInternalServerError)
	default:
		io.WriteString(rw, c.Line)
	}
}

// TestWitnessingHostile runs the real binary as a log with five witnesses
// (quorum 1) that each try it differently:
//
//   - good cosigns at once and makes the checkpoint witnessed;
//   - late cosigns the same checkpoint only after that: its cosignature is
//     merged into the served witnessed checkpoint, and kept across a restart,
//     so an observer that trusts late alone accepts it;
//   - stale dates its cosignatures at time 0: refused, that witness failing;
//   - absurd first answers 409 with a size of 2^62, then behaves: the node
//     asks it again after the back-off and gets its cosignature;
//   - moved redirects (307) to another port: not followed, a clear error on
//     its status line and in the log, and the other port receives nothing.
func TestWitnessingHostile(t *testing.T) {
	needBinary(t)
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	p := startProcess(t, dir)
	postOK(t, p.url, p.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)
	logKey := summaryOf(t, p.url, p.token).VerifierKey
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\nstderr:\n%s", code, p.stderr)
	}

	good := newFakeWitness("good.example/w", 51, nil)
	late := newFakeWitness("late.example/w", 52, nil)
	stale := newFakeWitness("stale.example/w", 53, func() time.Time { return time.Unix(0, 0) })
	absurd := newFakeWitness("absurd.example/w", 54, nil)
	elsewhere := newFakeWitness("moved.example/w", 55, nil)
	wdir := filepath.Join(root, "witnesses")
	if err := os.Mkdir(wdir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeWitness{good, late, stale, absurd, elsewhere} {
		f.witnessLog(t, wdir, logKey)
	}

	serve := func(h http.Handler) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	lateOpen := make(chan struct{})
	lateURL := serve(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select { // held until the checkpoint is witnessed without it
		case <-lateOpen:
		case <-time.After(10 * time.Second):
		}
		late.ServeHTTP(rw, r)
	}))
	var absurdAsked atomic.Int64
	absurdURL := serve(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if absurdAsked.Add(1) == 1 {
			io.Copy(io.Discard, r.Body)
			rw.Header().Set("Content-Type", "text/x.tlog.size")
			rw.WriteHeader(http.StatusConflict)
			io.WriteString(rw, "4611686018427387904\n")
			return
		}
		absurd.ServeHTTP(rw, r)
	}))
	var elsewhereGot atomic.Int64
	elsewhereURL := serve(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		elsewhereGot.Add(1)
		elsewhere.ServeHTTP(rw, r)
	}))
	movedURL := serve(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, elsewhereURL+"/add-checkpoint", http.StatusTemporaryRedirect)
	}))
	flags := []string{"--witness-quorum", "1"}
	for _, w := range []struct {
		f   *fakeWitness
		url string
	}{{good, serve(good)}, {late, lateURL}, {stale, serve(stale)}, {absurd, absurdURL}, {elsewhere, movedURL}} {
		flags = append(flags, "--witness", w.f.verifierKey()+"@"+w.url)
	}

	p = startProcess(t, dir, flags...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", p.stderr)
		}
	})
	first := waitWitnessed(t, p.url, p.token)
	close(lateOpen)
	status := func(s treeSummary, f *fakeWitness) (int64, string) {
		for _, w := range s.Witnesses {
			if w.Name == f.name {
				if w.LastError != nil {
					return w.CosignedSize, *w.LastError
				}
				return w.CosignedSize, ""
			}
		}
		t.Fatalf("no status line for %s: %+v", f.name, s.Witnesses)
		return 0, ""
	}
	var s treeSummary
	waitFor(t, "late and absurd cosign, stale and moved fail", func() (bool, string) {
		s = summaryOf(t, p.url, p.token)
		lateSize, _ := status(s, late)
		absurdSize, _ := status(s, absurd)
		_, staleErr := status(s, stale)
		_, movedErr := status(s, elsewhere)
		return lateSize == first.TreeSize && absurdSize == first.TreeSize && staleErr != "" && movedErr != "",
			fmt.Sprintf("%+v", s.Witnesses)
	})
	if s.TreeSize != first.TreeSize {
		t.Fatalf("the tree grew from %d to %d during the test", first.TreeSize, s.TreeSize)
	}
	if _, e := status(s, stale); !strings.Contains(e, "cosignature time outside the accepted window") || !strings.Contains(e, "1970-01-01T00:00:00Z") {
		t.Errorf("stale's status: %q", e)
	}
	if _, e := status(s, elsewhere); !strings.Contains(e, "redirect refused") || !strings.Contains(e, elsewhereURL) {
		t.Errorf("moved's status: %q", e)
	}
	if n := elsewhereGot.Load(); n != 0 {
		t.Errorf("the host moved redirects to received %d requests", n)
	}
	if n := absurdAsked.Load(); n < 2 {
		t.Errorf("absurd was asked %d times", n)
	}
	if !strings.Contains(p.stderr.String(), "redirect refused") {
		t.Errorf("no log line names the refused redirect:\n%s", p.stderr)
	}

	// Every valid cosignature of the checkpoint is served with it.
	want := []string{good.name, late.name, absurd.name}
	requireCosigners := func(when string) {
		t.Helper()
		s := summaryOf(t, p.url, p.token)
		if s.Witnessed == nil || s.Witnessed.TreeSize != first.TreeSize {
			t.Fatalf("%s: witnessed %+v", when, s.Witnessed)
		}
		got := slices.Clone(s.Witnessed.Cosigners)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: the witnessed checkpoint's cosigners are %v, want %v:\n%s", when, got, want, s.Witnessed.Checkpoint)
		}
		served := string(getText(t, p.url+"/v1/transparency/checkpoint?witnessed=1", p.token))
		for _, f := range []*fakeWitness{good, late, absurd} {
			out, code := runBinary(t, "transparency", "check", "--addr", p.url, "--token", p.token,
				"--state", filepath.Join(root, when+"-"+strings.ReplaceAll(f.name, "/", "_")+".json"), "--witness", f.verifierKey(), "--quorum", "1")
			if code != 0 {
				t.Errorf("%s: an observer trusting %s alone: exit %d\n%s\nserved:\n%s", when, f.name, code, out, served)
			}
		}
		if strings.Contains(served, "— "+stale.name+" ") {
			t.Errorf("%s: the refused cosignature is served:\n%s", when, served)
		}
	}
	requireCosigners("running")

	// Kept across a restart, as cosignatures.json holds it.
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\nstderr:\n%s", code, p.stderr)
	}
	p = startProcess(t, dir, flags...)
	requireCosigners("restarted")
}
