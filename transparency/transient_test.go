package transparency

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// TestTransient: the failures a follower waits out, and those that stop it.
func TestTransient(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "http://x/seal", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	reset := &url.Error{Op: "Get", URL: "http://x/seal", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("GET /seal: %w", refused), true},
		{fmt.Errorf("fetch events/000: %w", reset), true},
		{fmt.Errorf("fetch events/000: %w", io.ErrUnexpectedEOF), true},
		{&url.Error{Op: "Get", URL: "http://x/seal", Err: io.EOF}, true},
		{fmt.Errorf("fetch: %w", errStalled), true},
		{&url.Error{Op: "Get", URL: "http://x/seal", Err: &net.DNSError{Err: "timeout", IsTimeout: true}}, true},
		{&statusError{code: 503}, true},
		{&statusError{code: 500}, true},
		{fmt.Errorf("x: %w", &statusError{code: 429}), true},
		{&statusError{code: 404}, false},
		{&statusError{code: 401}, false},
		{&url.Error{Op: "Get", URL: "http://y/seal", Err: fmt.Errorf("%w: elsewhere", ErrRedirect)}, false},
		{&url.Error{Op: "Get", URL: "http://x/seal", Err: &net.DNSError{Err: "no such host", IsNotFound: true}}, false},
		{fmt.Errorf("%w: event 3 in events/000: %w", ErrBadEvent, io.ErrUnexpectedEOF), false},
		{fmt.Errorf("%w: %w", ErrBadSeal, reset), false},
		{&problemAt{result: "bad_tiles", err: fmt.Errorf("%w: %w", errBadTiles, &statusError{code: 503})}, false},
		{ErrForked, false},
		{ErrRolledBack, false},
		{context.Canceled, false},
		{errors.New("decode the answer: invalid character"), false},
		{nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestRetryDelay: from the interval, doubled for each failure in a row, at
// most MaxRetryDelay (or the interval, when longer), half of it at least.
func TestRetryDelay(t *testing.T) {
	for _, interval := range []time.Duration{100 * time.Millisecond, 10 * time.Second, time.Hour} {
		for attempt := 1; attempt <= 64; attempt++ {
			limit := max(MaxRetryDelay, interval)
			want := interval
			for i := 1; i < attempt && want < limit; i++ {
				want *= 2
			}
			want = min(want, limit)
			for range 20 {
				if d := RetryDelay(interval, attempt); d < want/2 || d > want {
					t.Fatalf("RetryDelay(%v, %d) = %v, want %v…%v", interval, attempt, d, want/2, want)
				}
			}
		}
	}
}

// TestReadLine: a bundle's lines, without their newlines; a line over the
// limit, with an excerpt; the end of the bundle, with what its last line
// held.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	r := bufio.NewReaderSize(strings.NewReader("a\n"+long+"\nbc\n"+long+"y\nlast"), 16)
	for _, want := range []string{"a", long, "bc"} {
		if got, err := readLine(r, len(long)); err != nil || string(got) != want {
			t.Fatalf("readLine = %.20q (%d bytes), %v; want %.20q", got, len(got), err, want)
		}
	}
	if got, err := readLine(r, len(long)); !errors.Is(err, errLineTooLong) || len(got) != evidenceExcerpt || got[0] != 'x' {
		t.Fatalf("a line over the limit: %d bytes, %v", len(got), err)
	}
	r = bufio.NewReaderSize(strings.NewReader("a\nlast"), 16)
	readLine(r, 10)
	if got, err := readLine(r, 10); err != io.EOF || string(got) != "last" {
		t.Fatalf("a last line without its newline: %q, %v", got, err)
	}
	if got, err := readLine(bufio.NewReader(strings.NewReader("")), 10); err != io.EOF || len(got) != 0 {
		t.Fatalf("the end: %q, %v", got, err)
	}
}

// mirrorFixture is an origin's log of n events published to a directory.
func mirrorFixture(t *testing.T, n int) (ed25519.PublicKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: priv})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	drafts := make([]eventlog.Draft, n-1)
	for i := range drafts {
		drafts[i] = eventlog.Draft{Type: "test.note", Payload: map[string]any{"n": i}}
	}
	if _, err := l.Append(context.Background(), drafts...); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "log")
	if _, err := Publish(context.Background(), LogSource(l, "origin"), dir, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	return pub, dir
}

// TestMirrorSourceFailures: a tile answered 503, a bundle cut short, and a
// bundle that stops arriving halfway are failures to fetch, which a follower
// retries (Transient), not problems with the source: no evidence is kept,
// what verified before is stored, and the next run completes the chain.
func TestMirrorSourceFailures(t *testing.T) {
	pubKey, dir := mirrorFixture(t, 600)
	files := http.FileServer(http.Dir(dir))
	half := func(w http.ResponseWriter, r *http.Request) int {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r.URL.Path)))
		if err != nil {
			t.Fatal(err)
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		return len(b)
	}
	for _, c := range []struct {
		name string
		fail func(w http.ResponseWriter, r *http.Request) bool // answers r badly, once
		says string
	}{
		{"a tile answers 503", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/tile/0/001" {
				return false
			}
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return true
		}, "503 Service Unavailable"},
		{"a bundle cut short", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/events/001" {
				return false
			}
			half(w, r)
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return true
		}, "unexpected EOF"},
		{"a bundle that stalls", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/events/001" {
				return false
			}
			half(w, r)
			<-r.Context().Done()
			return true
		}, errStalled.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var failed atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !failed.Load() && c.fail(w, r) {
					failed.Store(true)
					return
				}
				files.ServeHTTP(w, r)
			}))
			defer srv.Close()
			cl, err := NewObserverClient(srv.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			cl.idle = 300 * time.Millisecond
			data := t.TempDir()
			l, err := eventlog.Open(eventlog.Options{Dir: filepath.Join(data, "db"), PublicKey: pubKey})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			opts := MirrorOptions{URL: srv.URL, Evidence: filepath.Join(data, "mirror")}
			rep, err := Mirror(context.Background(), cl, l, opts)
			if !Transient(err) || !strings.Contains(fmt.Sprint(err), c.says) || rep.Evidence != "" {
				t.Fatalf("Mirror: %+v, %v; want a transient failure naming %q, without evidence", rep, err, c.says)
			}
			if files, _ := filepath.Glob(filepath.Join(data, "mirror.evidence-*")); len(files) != 0 {
				t.Fatalf("evidence of a failure to fetch: %v", files)
			}
			rep, err = Mirror(context.Background(), cl, l, opts)
			if err != nil || rep.Result != "extended" || l.Tip().Seq != 600 {
				t.Fatalf("the next run: %+v, %v, tip %d", rep, err, l.Tip().Seq)
			}
		})
	}
}
