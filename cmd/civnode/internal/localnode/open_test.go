package localnode

import (
	"crypto/ed25519"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
)

// TestServerOptionsCarryTheWholeCore: each part of core.Core whose type an
// http.Options field takes is carried over by ServerOptions, so a part the
// server comes to take cannot be left out of serve.
func TestServerOptionsCarryTheWholeCore(t *testing.T) {
	registry, err := servicenet.New(servicenet.Config{BaseURL: "http://127.0.0.1:1", NodeDID: eventlog.DIDKey(testKey.Public().(ed25519.PublicKey)),
		Sign: func(m []byte) []byte { return ed25519.Sign(testKey, m) }, Retries: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// With payment accounts and a registry, every part of the core is there.
	c, err := core.Open(eventlog.Options{InMemory: true, Key: testKey, Logger: slog.New(slog.DiscardHandler)},
		core.Config{Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets")), Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o := reflect.ValueOf(ServerOptions(c, civhttp.Options{}))
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
				t.Errorf("ServerOptions leaves Options.%s without the core's %s", opt.Name, part.Name)
			}
			carried++
		}
	}
	if carried < 10 {
		t.Errorf("only %d parts of the core match an Options field: the check is not looking", carried)
	}
}

var _, testKey, _ = ed25519.GenerateKey(nil)
