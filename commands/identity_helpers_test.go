package commands_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"testing"

	"github.com/civnode/civnode/commands"
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

// idNode is a node wired as cmd wires it: a real in-memory log, the read model fed
// by OnCommit and the decision model by OnSequenced, both rebuilt after Open.
type idNode struct {
	t      *testing.T
	key    ed25519.PrivateKey
	log    *eventlog.Log
	read   *projections.Identities
	decide *projections.Identities
	cmd    *commands.Identity
}

func newIDNode(t *testing.T) *idNode {
	t.Helper()
	n := &idNode{t: t, key: ed25519.NewKeyFromSeed(nodeSeed),
		read: projections.NewIdentities(), decide: projections.NewIdentities()}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: n.key, Logger: slog.New(slog.DiscardHandler),
		OnCommit: n.read.ApplyEvents, OnSequenced: n.decide.ApplyEvents})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	n.log = l
	// As cmd does: one scan rebuilds both models before any write.
	if err := projections.Rebuild(context.Background(), l, n.read, n.decide); err != nil {
		t.Fatal(err)
	}
	n.cmd, err = commands.NewIdentity(commands.IdentityOptions{Log: l, NodeKey: n.key,
		Identities: n.decide, Controllers: n.decide})
	if err != nil {
		t.Fatal(err)
	}
	return n
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

// The identity read model satisfies the interfaces the commands declare, as cmd
// wires them.
var (
	_ commands.IdentityReader   = (*projections.Identities)(nil)
	_ commands.ControllerReader = (*projections.Identities)(nil)
	_ commands.PublicIDResolver = (*projections.Identities)(nil)
	_ projections.Model         = (*projections.Identities)(nil)
)
