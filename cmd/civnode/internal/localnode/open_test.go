package localnode

import (
	"crypto/ed25519"
	"testing"

	"github.com/civnode/civnode/cmd/core/coretest"
	civhttp "github.com/civnode/civnode/http"
)

// TestServerOptionsCarryTheWholeCore: each part of core.Core whose type an
// http.Options field takes is carried over by ServerOptions, so a part the
// server comes to take cannot be left out of serve.
func TestServerOptionsCarryTheWholeCore(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	c := coretest.Full(t, key)
	coretest.CarriesEveryPart(t, "ServerOptions", c, ServerOptions(c, civhttp.Options{}))
}
