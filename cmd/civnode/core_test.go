package main

import (
	"crypto/ed25519"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	civhttp "github.com/civnode/civnode/http"
)

// TestServerOptionsCarryTheWholeCore: each part of core.Core whose type an
// http.Options field takes is carried over by serverOptions, so a part the
// server comes to take cannot be left out of serve.
func TestServerOptionsCarryTheWholeCore(t *testing.T) {
	registry, err := servicenet.New(servicenet.Config{BaseURL: "http://127.0.0.1:1", NodeDID: eventlog.DIDKey(faultKey.Public().(ed25519.PublicKey)),
		Sign: func(m []byte) []byte { return ed25519.Sign(faultKey, m) }, Retries: -1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// With payment accounts and a registry, every part of the core is there.
	c, err := core.Open(eventlog.Options{InMemory: true, Key: faultKey, Logger: discardLogger()},
		core.Config{Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets")), Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o := reflect.ValueOf(localnode.ServerOptions(c, civhttp.Options{}))
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
				t.Errorf("serverOptions leaves Options.%s without the core's %s", opt.Name, part.Name)
			}
			carried++
		}
	}
	if carried < 10 {
		t.Errorf("only %d parts of the core match an Options field: the check is not looking", carried)
	}
}
