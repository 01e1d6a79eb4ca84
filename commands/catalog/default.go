package catalog

import (
	_ "embed"
	"sync"
)

// defaultJSON is the catalog built into the binary.
//
//go:embed default.json
var defaultJSON []byte

var defaultCatalog = sync.OnceValue(func() *Catalog {
	c, err := Parse(defaultJSON)
	if err != nil {
		// TestDefault refuses such a build; a binary cannot carry one.
		panic("catalog: the built-in catalog default.json is invalid: " + err.Error())
	}
	return c
})

// Default returns the catalog built into the binary, parsed and validated on
// first use (at start-up: the commands package takes its default vocabulary from
// it). It is shared; callers must not modify it.
func Default() *Catalog { return defaultCatalog() }

// DefaultJSON returns a copy of the built-in catalog file, a starting point for
// an operator's own --catalog file.
func DefaultJSON() []byte { return append([]byte(nil), defaultJSON...) }
