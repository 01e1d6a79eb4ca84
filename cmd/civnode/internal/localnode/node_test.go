package localnode

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
)

// testConfig is a node of its own in a fresh data dir, on an ephemeral
// loopback port, with NATS in process only; each notice to the service
// manager goes to notices.
func testConfig(t *testing.T, notices chan<- string) Config {
	return Config{
		Dir: datadir.Dir(filepath.Join(t.TempDir(), "node")), Addr: "127.0.0.1:0", Catalog: catalog.Default(),
		Logger:    slog.New(slog.DiscardHandler),
		Listening: func(string) error { return nil },
		Notify:    func(state string) error { notices <- state; return nil },
	}
}

// auditActions are the actions of dir's audit entries, oldest first.
func auditActions(t *testing.T, dir datadir.Dir) []string {
	t.Helper()
	l, err := OpenChain(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	entries, err := l.AuditEntries(eventlog.AuditQuery{Action: "node.*", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	return actions
}

// TestNodeServesAndStops: a Node tells the service manager READY=1 with its
// address once it serves and STOPPING=1 once ctx is done; Serve then
// returns nil, and Close records node.stopped after node.started.
func TestNodeServesAndStops(t *testing.T) {
	notices := make(chan string, 4)
	cfg := testConfig(t, notices)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := OpenNode(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(ctx) }()
	next := func() string {
		t.Helper()
		select {
		case s := <-notices:
			return s
		case <-time.After(30 * time.Second):
			t.Fatal("no notice")
			return ""
		}
	}
	if got, want := next(), "READY=1\nSTATUS=serving on "+n.addr; got != want {
		t.Errorf("notice %q, want %q", got, want)
	}
	cancel()
	if got := next(); got != "STOPPING=1" {
		t.Errorf("notice %q, want STOPPING=1", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := auditActions(t, cfg.Dir); !slices.Equal(got, []string{"node.started", "node.stopped"}) {
		t.Errorf("audit %q, want node.started, node.stopped", got)
	}
}

// TestNodeClosedUnserved: a Node closed without serving has told the
// service manager nothing, no longer listens, and still leaves a
// node.started/node.stopped pair.
func TestNodeClosedUnserved(t *testing.T) {
	notices := make(chan string, 4)
	cfg := testConfig(t, notices)
	n, err := OpenNode(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := n.addr
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(notices) != 0 {
		t.Errorf("notice %q from a node that never served", <-notices)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
	if got := auditActions(t, cfg.Dir); !slices.Equal(got, []string{"node.started", "node.stopped"}) {
		t.Errorf("audit %q, want node.started, node.stopped", got)
	}
}
