package http

import (
	"crypto/ed25519"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/cmd/core/coretest"
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
// Options field has is carried over by wired.
func TestWiredSetsEveryPartOfTheCore(t *testing.T) {
	c := coretest.Full(t, ed25519.NewKeyFromSeed(testSeed))
	coretest.CarriesEveryPart(t, "wired", c, wired(Options{}, c))
}
