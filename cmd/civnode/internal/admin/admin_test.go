package admin

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
)

// TestOpenOffline: with no node running, Open works on the data dir itself,
// as the owner, and what it does stays in the store.
func TestOpenOffline(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	dir := datadir.Dir(filepath.Join(t.TempDir(), "node"))
	if err := dir.Create(logger); err != nil {
		t.Fatal(err)
	}
	key, err := dir.ServeNodeKey(logger)
	if err != nil {
		t.Fatal(err)
	}
	n, err := localnode.Open(ctx, dir, key, core.Config{Keys: localnode.Keystore(dir)}, logger, localnode.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	o, err := Open(ctx, dir, "127.0.0.1:1", logger)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := o.Tokens.Create(ctx, commands.TokenKindObserver, "")
	if err != nil || issued.Secret == "" {
		t.Fatalf("create: %+v %v", issued, err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o, err = Open(ctx, dir, "127.0.0.1:1", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	tokens, err := o.Tokens.List(ctx)
	if err != nil || len(tokens) != 1 || tokens[0].ID != issued.ID {
		t.Fatalf("list: %+v %v", tokens, err)
	}
}
