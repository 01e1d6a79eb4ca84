package oraclesock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/unixsock"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 30 * time.Second

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// stubOracle answers every operation at once, except Feeds, which waits for
// release when it is not nil.
type stubOracle struct{ release chan struct{} }

func (s stubOracle) Publish(_ context.Context, in commands.PublishFeedInput) (commands.FeedVersion, error) {
	return commands.FeedVersion{EventID: "e"}, nil
}
func (s stubOracle) Subscribe(context.Context, commands.SubscribeInput) (commands.Subscription, error) {
	return commands.Subscription{}, commands.NotFound("feed_not_found", "feed", "no feed")
}
func (s stubOracle) Pull(context.Context, commands.PullInput) (commands.Pulled, error) {
	return commands.Pulled{}, errors.New("disk on fire")
}
func (s stubOracle) Balances(context.Context, string) ([]Balance, error) {
	return []Balance{}, nil
}
func (s stubOracle) Feeds(ctx context.Context) ([]Feed, error) {
	if s.release != nil {
		<-s.release
	}
	return []Feed{{Feed: "f"}}, nil
}

// TestStop: stopping the socket lets a request in flight finish
// and be answered, closes idle connections, takes no new one and removes the
// socket file.
func TestStop(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "oracle.sock")
	release := make(chan struct{})
	ln, err := unixsock.Listen(sock, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(context.Background(), ln, stubOracle{release: release}, discardLogger())
	busy, err := Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	idle, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	got := make(chan error, 1)
	go func() {
		fs, err := busy.Feeds(context.Background())
		if err == nil && (len(fs) != 1 || fs[0].Feed != "f") {
			err = errors.New("wrong feeds")
		}
		got <- err
	}()
	// The request is in flight once Feeds blocks; the stub's channel cannot
	// say so, so wait until the server counts the connection busy.
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := 0
		for oc := range s.conns {
			if oc.busy {
				n++
			}
		}
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never ran")
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()

	idle.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("idle connection on stop: %v, want EOF", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v before the request in flight finished", err)
	default:
	}
	close(release)
	if err := <-got; err != nil {
		t.Errorf("the request in flight: %v", err)
	}
	if err := <-closed; err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// FuzzRequest: whatever a client sends, the node answers exactly one of
// a result and an error, in JSON, and never an internal detail for a refusal.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		`{"op":"feeds"}`, `{"op":"publish","args":{"as":"a","feed":"f","payload":{"x":1},"price":1}}`,
		`{"op":"subscribe","args":{"as":"a","feed":"f","max_price":1}}`, `{"op":"pull","args":{"as":"a","feed":"f"}}`,
		`{"op":"balance","args":{"agent":"a"}}`, `{"op":"signing_bytes","args":{}}`, `{"op":""}`, `{}`, `[]`, `null`,
		`{"op":"feeds"} {"op":"feeds"}`, `{"op":"feeds","args":null}`, `{"op":"balance","args":[1]}`,
	} {
		f.Add([]byte(seed))
	}
	s := &Server{svc: stubOracle{}, logger: discardLogger(), base: context.Background()}
	f.Fuzz(func(t *testing.T, line []byte) {
		resp := s.handle(line)
		if (resp.Result == nil) == (resp.Error == nil) {
			t.Fatalf("answer %+v to %q: want a result or an error", resp, line)
		}
		if resp.Error != nil && (resp.Error.Kind == "" || resp.Error.Code == "" || resp.Error.Message == "") {
			t.Fatalf("error %+v to %q", resp.Error, line)
		}
		if resp.Error != nil && strings.Contains(resp.Error.Message, "disk on fire") {
			t.Fatalf("an internal detail reached the client: %+v", resp.Error)
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatal(err)
		}
	})
}
