package http

import (
	"crypto/ed25519"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// wired returns o with the log, the read models and the commands of the core
// c, as civnode serve wires them (localnode.ServerOptions in cmd/civnode/internal/localnode): the one place
// the tests map a core onto Options. cmd/core cannot build Options itself:
// it would import this package, whose tests import it.
func wired(o Options, c *core.Core) Options {
	o.Log, o.Tokens = c.Log, c.Tokens
	o.Identity, o.Identities = c.Identity, c.Identities
	o.Mission, o.Missions = c.Mission, c.Missions
	o.Game, o.GameState = c.Game, c.GameState
	o.Servicenet, o.PaymentAccounts = c.Servicenet, c.PaymentAccounts
	return o
}

// TestWiredSetsEveryPartOfTheCore: each field of core.Core whose type an
// Options field has is carried over by wired, so a part the server comes to
// take cannot be left out of it.
func TestWiredSetsEveryPartOfTheCore(t *testing.T) {
	key := ed25519.NewKeyFromSeed(testSeed)
	registry, err := servicenet.New(servicenet.Config{BaseURL: "http://127.0.0.1:1", NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }, Retries: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// With payment accounts and a registry, every part of the core is there.
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()},
		core.Config{Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets")), Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o := reflect.ValueOf(wired(Options{}, c))
	cv := reflect.ValueOf(c).Elem()
	carried := 0
	for i := range cv.NumField() {
		part := cv.Type().Field(i)
		if cv.Field(i).IsNil() {
			t.Fatalf("the core has no %s: the test would not check it", part.Name)
		}
		for j := range o.NumField() {
			opt := o.Type().Field(j)
			if !part.Type.AssignableTo(opt.Type) {
				continue
			}
			if o.Field(j).Interface() != cv.Field(i).Interface() {
				t.Errorf("wired leaves Options.%s without the core's %s", opt.Name, part.Name)
			}
			carried++
		}
	}
	if carried < 10 {
		t.Errorf("only %d parts of the core match an Options field: the check is not looking", carried)
	}
}
