package http

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/civnode/civnode/eventlog/events"
)

// schemaOptions infer the tools' input schemas. A json.RawMessage argument
// (a mission's payload, an invoke's input) is a JSON object; jsonschema-go
// would read its []byte as an array of bytes.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
}}

// property is the schema of the property at path, for the schema edits. A
// path the argument struct does not have is added, and newTool then refuses
// the tool (sameProperties): an edit never describes an argument that is not
// there.
func property(s *jsonschema.Schema, path ...string) *jsonschema.Schema {
	for _, name := range path {
		p, ok := s.Properties[name]
		if !ok {
			p = &jsonschema.Schema{}
			if s.Properties == nil {
				s.Properties = map[string]*jsonschema.Schema{}
			}
			s.Properties[name] = p
		}
		s = p
	}
	return s
}

// sameProperties reports the first property path that edited has and
// inferred has not, at any depth.
func sameProperties(inferred, edited *jsonschema.Schema, at string) error {
	for name, p := range edited.Properties {
		q, ok := inferred.Properties[name]
		if !ok {
			return fmt.Errorf("the schema edits name %s%s, which the arguments do not have", at, name)
		}
		if err := sameProperties(q, p, at+name+"."); err != nil {
			return err
		}
	}
	return nil
}

// nonNull drops the "null" that jsonschema-go allows for a pointer: a member
// that is required, or optional and better omitted than null.
func nonNull(s *jsonschema.Schema) {
	if types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" }); len(types) == 1 {
		s.Type, s.Types = types[0], nil
	}
}

// describe sets the description of the property at path.
func describe(s *jsonschema.Schema, description string, path ...string) *jsonschema.Schema {
	p := property(s, path...)
	p.Description = description
	return p
}

// limitSchema bounds a limit argument as queryLimit does.
func limitSchema(s *jsonschema.Schema) {
	nonNull(s)
	s.Minimum, s.Maximum = ptr(1.0), ptr(float64(maxLimit))
}

// publishMissionSchema describes the reward's members and the enumerations.
func publishMissionSchema(s *jsonschema.Schema) {
	property(s, "publisher_kind").Enum = []any{events.PublisherAgent, events.PublisherOrganization, events.PublisherPlanetaryGovernment}
	nonNull(property(s, "reward"))
	for name, description := range map[string]string{
		"agent_credit":          "credits paid to the completing agent",
		"reputation":            "reputation awarded to the completing agent",
		"capacity":              "capacity slots unlocked for the completing agent",
		"treasury_share_credit": "credits routed to the subnet treasury",
	} {
		p := describe(s, description, "reward", name)
		nonNull(p)
		p.Minimum = ptr(0.0)
	}
}

// invokeSchema describes the settlement's members.
func invokeSchema(s *jsonschema.Schema) {
	nonNull(property(s, "message"))
	for _, d := range []struct {
		path        []string
		description string
	}{
		{[]string{"layer"}, "web3, for on-chain x402 payments"},
		{[]string{"rail"}, "x402"},
		{[]string{"request"}, "the payment request"},
		{[]string{"request", "protocol"}, "x402"},
		{[]string{"request", "payment_account_ref"}, "the payment account to pay from (civnode wallet create)"},
		{[]string{"request", "network"}, "the chain network the agent's pricing names, e.g. base-sepolia"},
	} {
		nonNull(describe(s, d.description, append([]string{"settlement"}, d.path...)...))
	}
}

// Tool annotations: hints for the client, never relied upon.
func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
}

func write() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
}

// invoke is an agent's call: the world beyond the node, and possibly paid.
func invoke() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{OpenWorldHint: ptr(true)}
}

func ptr[T any](v T) *T { return &v }
