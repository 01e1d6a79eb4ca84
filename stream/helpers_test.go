package stream_test

import (
	"context"
	"crypto/ed25519"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// node is a real in-memory event log whose commits are published by a real
// embedded NATS server, wired as serve wires them.
type node struct {
	log *eventlog.Log
	st  *stream.Server
	did string
}

func newNode(t *testing.T, opts stream.Options) *node {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.NodeDID = eventlog.DIDKey(pub)
	if opts.Listen != "" && opts.Authenticate == nil {
		opts.Authenticate = testTokens.check
	}
	st, err := stream.Start(opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close stream: %v", err)
		}
	})
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, OnCommit: st.Publish})
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return &node{log: l, st: st, did: opts.NodeDID}
}

// url is the node's port with testToken as the NATS token.
func (n *node) url() string {
	return "nats://" + testToken + "@" + n.st.Status().NATS.Listen
}

// testToken is a node token newNode's port takes unless a test gives its own
// check.
const testToken = "observer-test-token"

// tokenStore stands in for the node's tokens: a set of live secrets that a
// test can revoke.
type tokenStore struct {
	mu   sync.Mutex
	live map[string]string // secret -> id
}

func newTokenStore(secrets ...string) *tokenStore {
	ts := &tokenStore{live: map[string]string{}}
	for i, s := range secrets {
		ts.live[s] = "tok" + strconv.Itoa(i)
	}
	return ts
}

var testTokens = newTokenStore(testToken)

func (ts *tokenStore) check(secret string) (string, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	id, ok := ts.live[secret]
	return id, ok
}

func (ts *tokenStore) revoke(secret string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.live, secret)
}

// appendN appends n events of type typ, one per append.
func (n *node) appendN(t *testing.T, typ string, count int) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for i := range count {
		evs, err := n.log.Append(context.Background(), eventlog.Draft{Type: typ, Payload: map[string]any{"i": i}})
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		out = append(out, evs...)
	}
	return out
}

// receive reads want messages from sub, failing if the channel closes first
// or nothing arrives for a long time (a hang, not a speed check).
func receive(t *testing.T, sub *stream.Subscription, want int) []stream.Message {
	t.Helper()
	var got []stream.Message
	for len(got) < want {
		select {
		case m, ok := <-sub.C():
			if !ok {
				t.Fatalf("subscription ended after %d of %d messages: %v", len(got), want, sub.Err())
			}
			got = append(got, m)
		case <-time.After(30 * time.Second):
			t.Fatalf("received %d of %d messages in 30s", len(got), want)
		}
	}
	return got
}

// waitFor polls cond until it holds; the deadline only ends a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventlogDraft is a draft of type typ whose payload carries pad.
func eventlogDraft(typ, pad string) eventlog.Draft {
	return eventlog.Draft{Type: typ, Payload: map[string]any{"pad": pad}}
}
