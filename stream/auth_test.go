package stream_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/stream"
)

// lockedBuffer is a log sink the NATS goroutines may write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A port client without a node token, or with one the node does not take,
// is refused at connect, as HTTP answers 401; no secret is logged, and no
// error.
func TestPortRefusesClientsWithoutAToken(t *testing.T) {
	var logs lockedBuffer
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	addr := "nats://" + n.st.Status().NATS.Listen
	const wrong = "wrong-secret-4711"
	for name, opts := range map[string][]nats.Option{
		"no token":             nil,
		"a wrong token":        {nats.Token(wrong)},
		"a wrong password":     {nats.UserInfo("x", wrong)},
		"a user without token": {nats.UserInfo("observer", "")},
	} {
		nc, err := nats.Connect(addr, append(opts, nats.NoReconnect())...)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected; want refused", name)
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("%s: %v, want %v", name, err, nats.ErrAuthorization)
		}
	}
	if strings.Contains(logs.String(), wrong) {
		t.Fatalf("the logs hold a presented token:\n%s", logs.String())
	}
	// A refused client is the client's failure, as a 401 is: not an error
	// of the node's.
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("a refused client is logged as an error:\n%s", logs.String())
	}
}

// A node token is taken as the NATS token or as any user's password, and an
// observer's connection then gets the node's events.
func TestPortTakesANodeTokenAsTokenOrPassword(t *testing.T) {
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0"})
	addr := "nats://" + n.st.Status().NATS.Listen
	for name, opt := range map[string]nats.Option{
		"token":                            nats.Token(testToken),
		"password":                         nats.UserInfo("anyone", testToken),
		"password of the node's user name": nats.UserInfo("civnode", testToken),
	} {
		nc, err := nats.Connect(addr, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sub, err := nc.SubscribeSync(stream.EventSubject(n.did, ">"))
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		ev := n.appendN(t, "test.auth", 1)[0]
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("%s: no event: %v", name, err)
		}
		if string(m.Data) != string(ev.Raw()) {
			t.Fatalf("%s: got %q, want seq %d", name, m.Data, ev.Seq)
		}
		nc.Close()
	}
}

// A revoked token's open connection is closed within about RevokeCheck;
// another token's connection stays, and the revoked token is refused after.
func TestPortDropsARevokedToken(t *testing.T) {
	tokens := newTokenStore("keep-secret", "revoke-secret")
	n := newNode(t, stream.Options{Listen: "127.0.0.1:0", Authenticate: tokens.check})
	addr := "nats://" + n.st.Status().NATS.Listen
	closed := make(chan struct{})
	doomed, err := nats.Connect(addr, nats.Token("revoke-secret"), nats.NoReconnect(),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatal(err)
	}
	defer doomed.Close()
	kept, err := nats.Connect(addr, nats.Token("keep-secret"), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()

	revoked := time.Now()
	tokens.revoke("revoke-secret")
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the revoked token's connection is still open after 30s")
	}
	// A second is the promise; a loaded machine may add scheduling delay,
	// so the bound is loose but still far below "never".
	if took := time.Since(revoked); took > 5*time.Second {
		t.Fatalf("the revoked token's connection closed after %s, want about %s", took, stream.RevokeCheck)
	}
	if !kept.IsConnected() {
		t.Fatalf("another token's connection was closed too: %v", kept.LastError())
	}
	if err := kept.Flush(); err != nil {
		t.Fatalf("another token's connection: %v", err)
	}
	if nc, err := nats.Connect(addr, nats.Token("revoke-secret"), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("a revoked token connected")
	}
}

// A port needs a token check: without one it would serve anyone.
func TestPortNeedsATokenCheck(t *testing.T) {
	_, err := stream.Start(stream.Options{NodeDID: "did:key:zTest", Listen: "127.0.0.1:0"})
	if !errors.Is(err, stream.ErrNoTokenCheck) {
		t.Fatalf("Start with a port and no token check: %v, want %v", err, stream.ErrNoTokenCheck)
	}
}
