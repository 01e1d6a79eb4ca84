package transparency

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// store is a node's event log on a Pebble store in a temporary directory.
type store struct {
	dir string
	key ed25519.PrivateKey
	l   *eventlog.Log
}

// newStore opens a log of key on a Pebble store with events events, genesis
// included.
func newStore(t *testing.T, key ed25519.PrivateKey, events int) *store {
	t.Helper()
	s := &store{dir: filepath.Join(t.TempDir(), "db"), key: key}
	s.open(t)
	s.add(t, "base", events-1)
	return s
}

func (s *store) open(t *testing.T) {
	t.Helper()
	l, err := eventlog.Open(eventlog.Options{Dir: s.dir, Key: s.key, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.l = l
	t.Cleanup(func() { l.Close() })
}

// add appends n events of type test.note tagged tag, in batches, so that
// copies of one chain given different tags diverge.
func (s *store) add(t *testing.T, tag string, n int) {
	t.Helper()
	for done := 0; done < n; {
		k := min(512, n-done)
		drafts := make([]eventlog.Draft, k)
		for i := range drafts {
			drafts[i] = eventlog.Draft{Type: "test.note", Payload: map[string]any{"tag": tag, "n": done + i}}
		}
		if _, err := s.l.Append(context.Background(), drafts...); err != nil {
			t.Fatal(err)
		}
		done += k
	}
}

// copy is another store holding the same key and chain, as a node's data
// dir copied while it is stopped.
func (s *store) copy(t *testing.T) *store {
	t.Helper()
	if err := s.l.Close(); err != nil {
		t.Fatal(err)
	}
	c := &store{dir: filepath.Join(t.TempDir(), "db"), key: s.key}
	copyTree(t, s.dir, c.dir)
	s.open(t)
	c.open(t)
	return c
}

// publish publishes the store's tree to dir.
func (s *store) publish(t *testing.T, dir string) Published {
	t.Helper()
	p, err := Publish(context.Background(), LogSource(s.l, s.dir), dir, PublishOptions{})
	if err != nil {
		t.Fatalf("publish to %s: %v", dir, err)
	}
	return p
}

// serveDir serves dir over HTTP as any static web server would, and returns
// an observer's client of it.
func serveDir(t *testing.T, dir string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	c, err := NewObserverClient(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// copyTree copies the files of src to dst, where none of them is yet.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}
