package witness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/witness/witnesstest"
)

// The submitter against witnesses that misbehave or answer late: every
// cosignature of the witnessed checkpoint is kept, a cosignature dated far
// from the node's clock is refused, a redirect leaves the witness's host
// never, and a 409 naming an absurd size is a failure retried later.

// namedWitness is a witness of logs named name, with a key of its own (seed)
// and the clock now (nil: time.Now), its state in dir.
func namedWitness(t *testing.T, dir, name string, seed byte, now func() time.Time, logs ...string) *Witness {
	t.Helper()
	key, err := DeriveKey(ed25519Key(make32(seed)))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Key: key, Name: name, Logs: logs, StatePath: filepath.Join(dir, name[strings.LastIndex(name, "/")+1:]+".json")}
	if now != nil {
		opts.Cosigner = witnesstest.NewDatedCosigner(name, key, now)
	}
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func remoteOf(t *testing.T, vkey, base string) Remote {
	t.Helper()
	r, err := ParseRemote(vkey + "@" + base)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runSubmitter runs sub until stop is called or the test ends.
func runSubmitter(t *testing.T, sub *Submitter) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sub.Run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// openAs opens a witnessed note as an observer that trusts the log and the
// one witness vkey, and returns the witness's verified signatures.
func openAs(t *testing.T, signed []byte, logKey, vkey string) int {
	t.Helper()
	v, err := NewCosignatureVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(mustVerifier(t, logKey), v))
	if err != nil {
		return 0
	}
	count := 0
	for _, s := range n.Sigs {
		if s.Name == v.Name() && s.Hash == v.KeyHash() {
			count++
		}
	}
	return count
}

// TestLaterCosignaturesMerged: with a quorum of one, the first witness makes
// the checkpoint witnessed; a second that cosigns the same checkpoint later is
// merged into it (an observer trusting only the second can check it), the
// merged note is what the state file keeps across a restart, and a third
// witness cosigning after the restart is merged too.
func TestLaterCosignaturesMerged(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 5)
	w1 := namedWitness(t, dir, "first.example/w1", 11, nil, lg.vkey)
	w2 := namedWitness(t, dir, "second.example/w2", 12, nil, lg.vkey)
	w3 := namedWitness(t, dir, "third.example/w3", 13, nil, lg.vkey)
	var open atomic.Bool // w2 is down until opened
	h2 := witnessHandler(w2)
	s2 := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !open.Load() {
			http.Error(rw, "down for now", http.StatusServiceUnavailable)
			return
		}
		h2.ServeHTTP(rw, r)
	}))
	t.Cleanup(s2.Close)
	s1, s3 := serveWitness(t, w1), serveWitness(t, w3)
	state := filepath.Join(dir, "cosignatures.json")
	remotes := []Remote{remoteOf(t, w1.VerifierKey(), s1.URL), remoteOf(t, w2.VerifierKey(), s2.URL)}

	got := make(chan []byte, 10)
	sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 1, StatePath: state,
		Interval: 20 * time.Millisecond, OnWitnessed: func(_ int64, n []byte) { got <- n }})
	if err != nil {
		t.Fatal(err)
	}
	stop := runSubmitter(t, sub)
	wait := func(what string) []byte {
		t.Helper()
		select {
		case n := <-got:
			return n
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no witnessed checkpoint; witnessed %+v, statuses %+v", what, sub.Witnessed(), sub.Statuses())
			return nil
		}
	}
	first := wait("the first witness")
	if openAs(t, first, lg.vkey, w1.VerifierKey()) != 1 || openAs(t, first, lg.vkey, w2.VerifierKey()) != 0 {
		t.Fatalf("the first witnessed note:\n%s", first)
	}
	open.Store(true)
	merged := wait("the second witness's cosignature of the same checkpoint")
	if openAs(t, merged, lg.vkey, w1.VerifierKey()) != 1 || openAs(t, merged, lg.vkey, w2.VerifierKey()) != 1 {
		t.Fatalf("the merged note does not carry one cosignature of each witness:\n%s", merged)
	}
	if wc := sub.Witnessed(); wc == nil || wc.TreeSize != 5 || wc.Checkpoint != string(merged) ||
		fmt.Sprint(wc.Cosigners) != fmt.Sprint([]string{w1.Name(), w2.Name()}) {
		t.Fatalf("witnessed %+v", wc)
	}
	stop()

	// Restarted with a third witness: the merged note is kept, and the third
	// witness's cosignature joins it although no cosignature of that
	// checkpoint is pending any more.
	remotes = append(remotes, remoteOf(t, w3.VerifierKey(), s3.URL))
	sub, err = NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 1, StatePath: state,
		Interval: 20 * time.Millisecond, OnWitnessed: func(_ int64, n []byte) { got <- n }})
	if err != nil {
		t.Fatal(err)
	}
	if wc := sub.Witnessed(); wc == nil || wc.Checkpoint != string(merged) {
		t.Fatalf("after a restart: %+v", wc)
	}
	runSubmitter(t, sub)
	all := wait("the third witness after the restart")
	for _, w := range []*Witness{w1, w2, w3} {
		if openAs(t, all, lg.vkey, w.VerifierKey()) != 1 {
			t.Errorf("%s's cosignature is not in the note after the restart:\n%s", w.Name(), all)
		}
	}
	again, err := ReadWitnessed(state)
	if err != nil || again == nil || again.Checkpoint != string(all) || len(again.Cosigners) != 3 {
		t.Errorf("the state file keeps %+v (%v)", again, err)
	}
}

// TestStoredLaterCosignaturesMerged: a state file whose witnessed checkpoint
// lacks a cosignature of that very checkpoint stored for another witness (as
// kept when later cosignatures were dropped) serves it merged once read; a
// stored line that does not verify is left out.
func TestStoredLaterCosignaturesMerged(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 2)
	w1 := namedWitness(t, dir, "first.example/w1", 11, nil, lg.vkey)
	w2 := namedWitness(t, dir, "second.example/w2", 12, nil, lg.vkey)
	w3 := namedWitness(t, dir, "third.example/w3", 13, nil, lg.vkey)
	c3, err := w3.AddCheckpoint(lg.request(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	wrongTree := c3.Line // w3's own, of the tree of 2: it does not verify over 3
	lg.append(t, "a", 1)
	_, signed, err := lg.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	lines := map[*Witness]string{}
	for _, w := range []*Witness{w1, w2} {
		c, err := w.AddCheckpoint(lg.request(t, 0))
		if err != nil {
			t.Fatal(err)
		}
		lines[w] = c.Line
	}
	at := time.Now().UTC().Format(time.RFC3339)
	st := submitterState{
		Witnessed: &Witnessed{TreeSize: 3, Checkpoint: string(signed) + lines[w1], Cosigners: []string{w1.Name()}},
		Witnesses: map[string]storedCosigned{
			w1.VerifierKey(): {CosignedSize: 3, CosignedAt: at, Cosignature: lines[w1]},
			w2.VerifierKey(): {CosignedSize: 3, CosignedAt: at, Cosignature: lines[w2]},
			w3.VerifierKey(): {CosignedSize: 3, CosignedAt: at, Cosignature: wrongTree},
		},
	}
	state := filepath.Join(dir, "cosignatures.json")
	if err := writeJSONFile(state, st); err != nil {
		t.Fatal(err)
	}
	var remotes []Remote
	for _, w := range []*Witness{w1, w2, w3} {
		remotes = append(remotes, remoteOf(t, w.VerifierKey(), "http://127.0.0.1:1"))
	}
	sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 1, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	wc := sub.Witnessed()
	if wc == nil || wc.Checkpoint != string(signed)+lines[w1]+lines[w2] || fmt.Sprint(wc.Cosigners) != fmt.Sprint([]string{w1.Name(), w2.Name()}) {
		t.Fatalf("witnessed %+v", wc)
	}
}

// TestCosignatureTimeWindow: a cosignature dated more than CosignatureWindow
// from the node's clock, either way (0 and 2^63-1 included), is that witness
// failing (ErrCosignatureTime, counted as an error, nothing witnessed); one
// within the window is kept.
func TestCosignatureTimeWindow(t *testing.T) {
	lg := newMemLog(t, 1)
	lg.append(t, "a", 4)
	nodeNow := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{"at 0", time.Unix(0, 0), false},
		{"at 2^63-1", time.Unix(math.MaxInt64, 0), false},
		{"two hours behind", nodeNow.Add(-2 * time.Hour), false},
		{"two hours ahead", nodeNow.Add(2 * time.Hour), false},
		{"just past the window", nodeNow.Add(CosignatureWindow + time.Second), false},
		{"half an hour behind", nodeNow.Add(-30 * time.Minute), true},
		{"at the window's edge ahead", nodeNow.Add(CosignatureWindow), true},
		{"on time", nodeNow, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := namedWitness(t, dir, "clock.example/w", 21, func() time.Time { return tc.at }, lg.vkey)
			srv := serveWitness(t, w)
			sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: []Remote{remoteOf(t, w.VerifierKey(), srv.URL)}, Quorum: 1,
				StatePath: filepath.Join(dir, "cosignatures.json"), Now: func() time.Time { return nodeNow }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = sub.submit(context.Background(), sub.witnesses[0])
			st := sub.Statuses()[0]
			if tc.ok {
				if err != nil || sub.Witnessed() == nil || st.Submissions["cosigned"] != 1 {
					t.Fatalf("refused: %v; witnessed %+v, status %+v", err, sub.Witnessed(), st)
				}
				return
			}
			if !errors.Is(err, ErrCosignatureTime) || st.Submissions["error"] != 1 || !strings.Contains(st.LastError, "from this node's clock") {
				t.Fatalf("err %v, status %+v; want ErrCosignatureTime counted as an error", err, st)
			}
			if wc := sub.Witnessed(); wc != nil || st.CosignedAt != "" {
				t.Fatalf("the refused cosignature was kept: %+v, status %+v", wc, st)
			}
		})
	}
}

// TestRedirects: a 307 on the witness's own scheme, host and port is
// followed (the checkpoint posted again there and cosigned); one to another
// port is not, and that host receives nothing; nor is a chain of redirects
// longer than maxRedirects.
func TestRedirects(t *testing.T) {
	lg := newMemLog(t, 1)
	lg.append(t, "a", 3)
	submit := func(t *testing.T, w *Witness, base string) (*Submitter, error) {
		t.Helper()
		sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: []Remote{remoteOf(t, w.VerifierKey(), base)}, Quorum: 1,
			StatePath: filepath.Join(t.TempDir(), "cosignatures.json")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = sub.submit(context.Background(), sub.witnesses[0])
		return sub, err
	}

	t.Run("same host", func(t *testing.T) {
		w := namedWitness(t, t.TempDir(), "moved.example/w", 31, nil, lg.vkey)
		h := witnessHandler(w)
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/old/") {
				http.Redirect(rw, r, "/new/add-checkpoint", http.StatusTemporaryRedirect)
				return
			}
			h.ServeHTTP(rw, r)
		}))
		t.Cleanup(srv.Close)
		sub, err := submit(t, w, srv.URL+"/old")
		if err != nil || sub.Witnessed() == nil {
			t.Fatalf("a same-host 307 was not followed: %v; status %+v", err, sub.Statuses()[0])
		}
	})

	t.Run("another host", func(t *testing.T) {
		w := namedWitness(t, t.TempDir(), "elsewhere.example/w", 32, nil, lg.vkey)
		h := witnessHandler(w)
		var received atomic.Int64
		other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			received.Add(1)
			h.ServeHTTP(rw, r)
		}))
		t.Cleanup(other.Close)
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			http.Redirect(rw, r, other.URL+"/add-checkpoint", http.StatusTemporaryRedirect)
		}))
		t.Cleanup(srv.Close)
		sub, err := submit(t, w, srv.URL)
		if !errors.Is(err, ErrRedirect) {
			t.Fatalf("a 307 to %s: %v, want ErrRedirect", other.URL, err)
		}
		st := sub.Statuses()[0]
		if st.Submissions["error"] != 1 || !strings.Contains(st.LastError, "redirected to "+other.URL) || sub.Witnessed() != nil {
			t.Errorf("status %+v, witnessed %+v", st, sub.Witnessed())
		}
		if n := received.Load(); n != 0 {
			t.Fatalf("the other host received %d requests", n)
		}
	})

	t.Run("too many", func(t *testing.T) {
		w := namedWitness(t, t.TempDir(), "loop.example/w", 33, nil, lg.vkey)
		var hops atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			http.Redirect(rw, r, fmt.Sprintf("/hop%d/add-checkpoint", hops.Add(1)), http.StatusTemporaryRedirect)
		}))
		t.Cleanup(srv.Close)
		if _, err := submit(t, w, srv.URL); !errors.Is(err, ErrRedirect) || hops.Load() != maxRedirects+1 {
			t.Fatalf("a chain of redirects: %v after %d requests, want ErrRedirect after %d", err, hops.Load(), maxRedirects+1)
		}
	})
}

// TestAbsurdHeldSize: a witness that answers 409 with a size beyond
// eventlog.MaxTreeSize, or beyond the tree submitted, is failing for that
// attempt (ErrHeldSize), and the size is not taken as what it holds: the
// next attempt asks it again from the size known before, and is cosigned.
func TestAbsurdHeldSize(t *testing.T) {
	lg := newMemLog(t, 1)
	lg.append(t, "a", 6)
	for _, tc := range []struct {
		name   string
		size   string
		result string
	}{
		{"beyond MaxTreeSize", "4611686018427387904", "error"},
		{"just beyond MaxTreeSize", fmt.Sprint(eventlog.MaxTreeSize + 1), "error"},
		{"beyond the tree", "7", "conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := namedWitness(t, dir, "absurd.example/w", 41, nil, lg.vkey)
			h := witnessHandler(w)
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if requests.Add(1) == 1 {
					io.Copy(io.Discard, r.Body)
					rw.Header().Set("Content-Type", "text/x.tlog.size")
					rw.WriteHeader(http.StatusConflict)
					io.WriteString(rw, tc.size+"\n")
					return
				}
				h.ServeHTTP(rw, r)
			}))
			t.Cleanup(srv.Close)
			sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: []Remote{remoteOf(t, w.VerifierKey(), srv.URL)}, Quorum: 1,
				StatePath: filepath.Join(dir, "cosignatures.json")})
			if err != nil {
				t.Fatal(err)
			}
			rs := sub.witnesses[0]
			if _, err := sub.submit(context.Background(), rs); !errors.Is(err, ErrHeldSize) {
				t.Errorf("a 409 with size %s: %v, want ErrHeldSize", tc.size, err)
			}
			if st := sub.Statuses()[0]; st.Submissions[tc.result] != 1 || st.LastError == "" || rs.held != 0 {
				t.Errorf("after the 409: status %+v, held %d", st, rs.held)
			}
			if size, err := sub.submit(context.Background(), rs); err != nil || size != 6 || requests.Load() != 2 {
				t.Fatalf("the next attempt: size %d, %v, after %d requests; want a cosignature of 6 after 2", size, err, requests.Load())
			}
			if wc := sub.Witnessed(); wc == nil || wc.TreeSize != 6 {
				t.Fatalf("witnessed %+v", wc)
			}
		})
	}
}

// TestWitnessedReplacesOwnLine: a witness's newer cosignature of the
// witnessed checkpoint takes the place of its older one (one line a key, the
// freshest for observers that check a cosignature's age); the same line
// again changes nothing.
func TestWitnessedReplacesOwnLine(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 2)
	clock := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	w1 := namedWitness(t, dir, "first.example/w1", 11, func() time.Time { return clock }, lg.vkey)
	w2 := namedWitness(t, dir, "second.example/w2", 12, nil, lg.vkey)
	_, signed, err := lg.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	older, err := w1.AddCheckpoint(lg.request(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	other, err := w2.AddCheckpoint(lg.request(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Minute)
	newer, err := w1.AddCheckpoint(lg.request(t, 2))
	if err != nil || !newer.Again || newer.Line == older.Line {
		t.Fatalf("the second cosignature: %+v, %v", newer, err)
	}
	r1 := remoteOf(t, w1.VerifierKey(), "http://127.0.0.1:1")
	w := &Witnessed{TreeSize: 2, Checkpoint: string(signed) + older.Line + other.Line, Cosigners: []string{w1.Name(), w2.Name()}}
	got, changed := w.with(r1, newer.Line)
	if !changed || got.Checkpoint != string(signed)+newer.Line+other.Line || fmt.Sprint(got.Cosigners) != fmt.Sprint(w.Cosigners) {
		t.Fatalf("with the newer line: %v %+v", changed, got)
	}
	if w.Checkpoint != string(signed)+older.Line+other.Line {
		t.Fatal("with changed the checkpoint it was called on")
	}
	if again, changed := got.with(r1, newer.Line); changed || again != got {
		t.Fatalf("the same line again: %v %+v", changed, again)
	}
}
