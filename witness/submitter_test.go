package witness

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// serveWitness is a minimal C2SP tlog-witness endpoint over w.
func serveWitness(t *testing.T, w *Witness) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(witnessHandler(w))
	t.Cleanup(srv.Close)
	return srv
}

// witnessHandler answers add-checkpoint requests with w, at any path.
func witnessHandler(w *Witness) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c, err := w.AddCheckpoint(body)
		var re *RequestError
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
	})
}

// TestSubmitterGathersAQuorum runs a submitter against two witnesses, one of
// which already holds a tree of the log (a 409 tells the size; the node
// resends from it), and one that is down.
func TestSubmitterGathersAQuorum(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 4)
	w1 := newTestWitness(t, filepath.Join(dir, "w1.json"), lg.vkey)
	if _, err := w1.AddCheckpoint(lg.request(t, 0)); err != nil { // w1 holds 4
		t.Fatal(err)
	}
	lg.append(t, "a", 6)
	k2 := make32(5)
	w2key, _ := DeriveKey(ed25519Key(k2))
	w2, err := New(Options{Key: w2key, Name: "second.example/witness", Logs: []string{lg.vkey}, StatePath: filepath.Join(dir, "w2.json")})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := serveWitness(t, w1), serveWitness(t, w2)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	remotes := []Remote{}
	for _, spec := range []string{w1.VerifierKey() + "@" + s1.URL, w2.VerifierKey() + "@" + s2.URL,
		CosignatureVerifierKey("down.example/witness", ed25519Key(make32(6)).Public().(ed25519PublicKey)) + "@" + down.URL} {
		r, err := ParseRemote(spec)
		if err != nil {
			t.Fatal(err)
		}
		remotes = append(remotes, r)
	}
	got := make(chan []byte, 10)
	sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 2, StatePath: filepath.Join(dir, "cosignatures.json"),
		Interval: 20 * time.Millisecond, OnWitnessed: func(_ int64, n []byte) { got <- n }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sub.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var signed []byte
	select {
	case signed = <-got:
	case <-time.After(10 * time.Second):
		t.Fatalf("no witnessed checkpoint; statuses %+v", sub.Statuses())
	}
	v1, _ := NewCosignatureVerifier(w1.VerifierKey())
	v2, _ := NewCosignatureVerifier(w2.VerifierKey())
	n, err := note.Open(signed, note.VerifierList(mustVerifier(t, lg.vkey), v1, v2))
	if err != nil || len(n.Sigs) != 3 {
		t.Fatalf("the witnessed note: %v, %d signatures verified, want 3", err, len(n.Sigs))
	}
	if wc := sub.Witnessed(); wc == nil || wc.TreeSize != 10 || len(wc.Cosigners) != 2 {
		t.Fatalf("witnessed %+v", wc)
	}
	st := sub.Statuses()
	if st[0].Submissions["conflict"] != 1 || st[0].CosignedSize != 10 || st[2].LastError == "" {
		t.Errorf("statuses %+v", st)
	}
	// A restart keeps the witnessed checkpoint.
	cancel()
	<-done
	again, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 2, StatePath: filepath.Join(dir, "cosignatures.json")})
	if err != nil {
		t.Fatal(err)
	}
	if wc := again.Witnessed(); wc == nil || wc.Checkpoint != string(signed) {
		t.Errorf("after a restart: %+v", wc)
	}
}
