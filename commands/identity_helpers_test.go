package commands_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// nodeSeed fixes the node key of identity tests.
var nodeSeed = []byte("civnode-identity-test-seed-32-b!")

var (
	owner    = commands.Actor{TokenID: "owner", Kind: commands.ActorOwner, Governs: []string{"genesis"}}
	observer = commands.Actor{TokenID: "obs", Kind: commands.ActorObserver}
)

func agentActor(did string) commands.Actor {
	return commands.Actor{TokenID: "agent", Kind: commands.ActorAgent, AgentDID: did}
}

// idNode is a node wired as cmd wires it (core.Open): a real in-memory log
// folding into the read models, the identity commands over their decision view.
type idNode struct {
	t    *testing.T
	key  ed25519.PrivateKey
	log  *eventlog.Log
	read *projections.Identities
	cmd  *commands.Identity
}

func newIDNode(t *testing.T) *idNode {
	t.Helper()
	return newIDNodeGoverning(t)
}

// newIDNodeGoverning is newIDNode on a node that governs subnets (serve
// --governs).
func newIDNodeGoverning(t *testing.T, subnets ...string) *idNode {
	t.Helper()
	c := openCoreWith(t, core.Config{Governs: subnets})
	return &idNode{t: t, key: ed25519.NewKeyFromSeed(nodeSeed), log: c.Log, read: c.Identities, cmd: c.Identity}
}

// openCore opens an in-memory node through the wiring cmd uses, with the
// mission and game commands accepting cat's vocabulary (nil: built-in).
func openCore(t *testing.T, cat *catalog.Catalog) *core.Core {
	t.Helper()
	return openCoreWith(t, core.Config{Catalog: cat})
}

// openCoreWith is openCore with the whole configuration of the commands.
func openCoreWith(t *testing.T, cfg core.Config) *core.Core {
	t.Helper()
	c, err := core.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(nodeSeed),
		Logger: slog.New(slog.DiscardHandler)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// bootstrap registers an identity as the owner and fails the test on error.
func (n *idNode) bootstrap(name string, publicID ...string) commands.BootstrapResult {
	n.t.Helper()
	in := commands.BootstrapInput{DisplayName: name}
	if len(publicID) > 0 {
		in.PublicID = &publicID[0]
	}
	res, err := n.cmd.Bootstrap(context.Background(), owner, in)
	if err != nil {
		n.t.Fatalf("bootstrap %q: %v", name, err)
	}
	return res
}

// refused checks that err is a *commands.Error of kind, code and field, and that
// nothing was appended since tip.
func (n *idNode) refused(t *testing.T, err error, tip uint64, kind commands.Kind, code, field string) {
	t.Helper()
	var ce *commands.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *commands.Error %s", err, code)
	}
	if ce.Kind != kind || ce.Code != code || ce.Field != field {
		t.Errorf("err = kind %d code %q field %q (%s), want kind %d code %q field %q",
			ce.Kind, ce.Code, ce.Field, ce.Message, kind, code, field)
	}
	if got := n.log.Tip().Seq; got != tip {
		t.Errorf("tip moved from %d to %d on a refused command", tip, got)
	}
}

func ptr[T any](v T) *T { return &v }

// must returns v; a query's error, which no test expects, panics the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// found returns a lookup's value and whether it was found; its error, which no
// test expects, panics the test.
func found[T any](v T, ok bool, err error) (T, bool) {
	if err != nil {
		panic(err)
	}
	return v, ok
}

// The identity read model satisfies the interfaces the commands declare, as cmd
// wires them.
var (
	_ commands.IdentityReader   = (*projections.Identities)(nil)
	_ commands.ControllerReader = (*projections.Identities)(nil)
	_ commands.PublicIDResolver = (*projections.Identities)(nil)
)
