// Command decode checks answers of a running civnode against the Go types
// oapi-codegen generated from its OpenAPI document (package civnodeapi, which
// TestOpenAPIGoClient in http/openapi_codegen_test.go generates in a scratch
// copy of this module before it builds this program).
//
// Each answer names its operation id and status. The generated client's
// method <OperationId>WithResponse returns *<OperationId>Response, whose field
// JSON<status> is the generated type of that answer's body; the body is
// decoded into it with unknown fields refused, so a member the document does
// not declare fails as well as a mistyped one.
//
// Usage: decode ANSWERS.json. Exit 0 and a one-line summary when every answer
// decodes; exit 1 with the failures on stderr when not; exit 2 on a usage
// error.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"civnode.invalid/openapicodegen/civnodeapi"
)

// answer is one response captured from a running node.
type answer struct {
	Operation string          `json:"operation"` // the document's operationId
	Request   string          `json:"request"`   // "METHOD /path?query", for messages
	Status    int             `json:"status"`
	Body      json.RawMessage `json:"body"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: decode ANSWERS.json")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var answers []answer
	if err := json.Unmarshal(b, &answers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	client := reflect.TypeFor[*civnodeapi.ClientWithResponses]()
	var failures []string
	ops := make(map[string]bool)
	for _, a := range answers {
		if err := decode(client, a); err != nil {
			failures = append(failures, fmt.Sprintf("%s (%s) %d: %v", a.Request, a.Operation, a.Status, err))
		}
		ops[a.Operation] = true
	}
	if len(failures) > 0 {
		fmt.Fprintln(os.Stderr, strings.Join(failures, "\n"))
		os.Exit(1)
	}
	fmt.Printf("decoded %d answers of %d operations into the generated types\n", len(answers), len(ops))
}

// decode decodes a's body into the generated type of its operation's answer
// of a's status.
func decode(client reflect.Type, a answer) error {
	r, _ := utf8.DecodeRuneInString(a.Operation)
	name := string(unicode.ToUpper(r)) + a.Operation[utf8.RuneLen(r):]
	m, ok := client.MethodByName(name + "WithResponse")
	if !ok || m.Type.NumOut() != 2 {
		return fmt.Errorf("the generated client has no method %sWithResponse", name)
	}
	resp := m.Type.Out(0)
	if resp.Kind() != reflect.Pointer || resp.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%sWithResponse returns %v, not a pointer to a struct", name, resp)
	}
	field, ok := resp.Elem().FieldByName("JSON" + strconv.Itoa(a.Status))
	if !ok || field.Type.Kind() != reflect.Pointer {
		return fmt.Errorf("%v has no field JSON%d for this answer", resp.Elem(), a.Status)
	}
	v := reflect.New(field.Type.Elem())
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		return fmt.Errorf("into %v: %w", field.Type.Elem(), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("into %v: data after the value", field.Type.Elem())
	}
	return nil
}
