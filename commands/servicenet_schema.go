package commands

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// An invoke's input must match its agent's input_schema (docs/servicenet.md, "Invoking").
// The schema comes from the registry, so it is untrusted: it may not make the
// node read a file or fetch a URL ($ref resolves inside the schema only), and
// compiled schemas are cached by content, bounded.

// maxSchemas bounds the compiled schemas kept; beyond it the cache starts over.
const maxSchemas = 256

// maxViolations bounds the violations one answer lists.
const maxViolations = 100

// Violation is one way an input fails its schema: where in the input (a JSON
// pointer, "" for the whole input) and why.
type Violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

type schemaCache struct {
	mu      sync.Mutex
	schemas map[[sha256.Size]byte]*jsonschema.Schema
}

func newSchemaCache() *schemaCache {
	return &schemaCache{schemas: map[[sha256.Size]byte]*jsonschema.Schema{}}
}

// compile returns the compiled schema of raw.
func (c *schemaCache) compile(raw []byte) (*jsonschema.Schema, error) {
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	sch, ok := c.schemas[sum]
	c.mu.Unlock()
	if ok {
		return sch, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadSchema, err)
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(jsonschema.SchemeURLLoader{}) // no file, no network
	const loc = "urn:civnode:input-schema"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadSchema, err)
	}
	sch, err = comp.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadSchema, err)
	}
	c.mu.Lock()
	if len(c.schemas) >= maxSchemas {
		clear(c.schemas)
	}
	c.schemas[sum] = sch
	c.mu.Unlock()
	return sch, nil
}

// validate checks input (a JSON object) against schema and lists every
// violation; nil when the input matches.
func (c *schemaCache) validate(schema, input []byte) ([]Violation, error) {
	sch, err := c.compile(schema)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("decode input: %w", err)
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Violation
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil || len(out) == maxViolations {
			continue
		}
		// The schema's messages quote the input, which may be as large as a
		// request: bounded like every error's text.
		out = append(out, Violation{Path: CapText(u.InstanceLocation), Message: CapText(u.Error.String())})
	}
	if len(out) == 0 {
		out = []Violation{{Path: "", Message: CapText(ve.Error())}}
	}
	return out, nil
}
