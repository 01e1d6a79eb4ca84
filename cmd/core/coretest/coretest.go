package coretest

import (
	"crypto/ed25519"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// Full opens an in-memory core with every part: payment accounts and a
// registry client (of a registry that is not there) included. It is closed
// when t ends.
func Full(t testing.TB, key ed25519.PrivateKey) *core.Core {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	registry, err := servicenet.New(servicenet.Config{BaseURL: "http://127.0.0.1:1", NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }, Retries: -1, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discard},
		core.Config{Keys: servicenet.NewKeystore(filepath.Join(t.TempDir(), "wallets")), Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// CarriesEveryPart fails t unless opts, a struct made from c by the
// mapping named mapping, holds each part of c in every field whose type
// takes it, so that a part a server comes to take cannot be left out.
func CarriesEveryPart(t testing.TB, mapping string, c *core.Core, opts any) {
	t.Helper()
	o := reflect.ValueOf(opts)
	cv := reflect.ValueOf(c).Elem()
	carried := 0
	for i := range cv.NumField() {
		part := cv.Type().Field(i)
		if cv.Field(i).IsNil() {
			t.Fatalf("the core has no %s: the check would not see it", part.Name)
		}
		for j := range o.NumField() {
			opt := o.Type().Field(j)
			if !part.Type.AssignableTo(opt.Type) {
				continue
			}
			if o.Field(j).Interface() != cv.Field(i).Interface() {
				t.Errorf("%s leaves Options.%s without the core's %s", mapping, opt.Name, part.Name)
			}
			carried++
		}
	}
	if carried < 10 {
		t.Errorf("only %d parts of the core match an Options field: the check is not looking", carried)
	}
}
