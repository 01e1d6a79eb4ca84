package http

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/ijson"
)

// bodyKind is the body of one POST route, decoded as its handler decodes it.
type bodyKind struct {
	route string
	path  *regexp.Regexp // the route's paths, as the docs' examples write them
	new   func() any     // the destination the handler passes to decodeJSON
}

var bodyKinds = []bodyKind{
	{"POST /v1/core/missions", regexp.MustCompile(`^/v1/core/missions$`),
		func() any { return new(commands.CreateMissionInput) }},
	{"POST /v1/core/missions/{mission_id}/claim", regexp.MustCompile(`^/v1/core/missions/[^/]+/claim$`),
		func() any { return new(commands.ClaimMissionInput) }},
	{"POST /v1/core/missions/{mission_id}/complete", regexp.MustCompile(`^/v1/core/missions/[^/]+/complete$`),
		func() any { return new(commands.CompleteMissionInput) }},
	{"POST /v1/core/missions/{mission_id}/settle", regexp.MustCompile(`^/v1/core/missions/[^/]+/settle$`),
		func() any { return new(commands.SettleMissionInput) }},
	{"POST /v1/civilization/bootstrap-identity", regexp.MustCompile(`^/v1/civilization/bootstrap-identity$`),
		func() any { return new(commands.BootstrapInput) }},
	{"POST /v1/civilization/public-identity", regexp.MustCompile(`^/v1/civilization/public-identity$`),
		func() any { return new(commands.PublicIdentityInput) }},
	{"POST /v1/civilization/controller-binding", regexp.MustCompile(`^/v1/civilization/controller-binding$`),
		func() any { return new(commands.ControllerBindingInput) }},
	{"POST /v1/civilization/profile", regexp.MustCompile(`^/v1/civilization/profile$`),
		func() any { return new(commands.ProfileInput) }},
	{"POST /v1/admin/tokens", regexp.MustCompile(`^/v1/admin/tokens$`),
		func() any { return new(createTokenRequest) }},
	{"POST /v1/admin/tokens/{token_id}/rotate|revoke", regexp.MustCompile(`^/v1/admin/tokens/[^/]+/(rotate|revoke)$`),
		func() any { return new(emptyRequest) }},
	{"POST /v1/admin/payment-accounts", regexp.MustCompile(`^/v1/admin/payment-accounts$`),
		func() any { return new(commands.CreatePaymentAccountInput) }},
	{"POST /v1/core/servicenet/agents/{agent_id}/invoke", regexp.MustCompile(`^/v1/core/servicenet/agents/[^/]+/invoke$`),
		func() any { return new(commands.InvokeInput) }},
	{"POST /v1/core/servicenet/agents/{agent_id}/tasks/{task_id}/get", regexp.MustCompile(`^/v1/core/servicenet/agents/[^/]+/tasks/[^/]+/get$`),
		func() any { return new(emptyRequest) }},
	{"POST /v1/node/proof", regexp.MustCompile(`^/v1/node/proof$`),
		func() any { return new(nodeProofRequest) }},
	// decodeInstall decodes into a pointer, to tell null from {}.
	{"POST /v1/game/{starter-missions,mission-pack}/bootstrap", regexp.MustCompile(`^/v1/game/(starter-missions|mission-pack)/bootstrap$`),
		func() any { return new(*commands.InstallInput) }},
}

// fuzzBodyLimit is the body limit of the server FuzzDecodeRequestBody decodes
// with: small, so that the fuzzer reaches it.
const fuzzBodyLimit = 2048

// FuzzDecodeRequestBody decodes bodies as each POST route does (decodeJSON
// into the route's own input type) and holds that:
//   - a body over the limit is 413 body_too_large, whatever it holds;
//   - under it, decodeJSON is decodeBody: the same value or the same error;
//   - a body that is not I-JSON is refused as ijson.Check refuses it, the same
//     whatever the route (I-JSON is decided first and apart from the type);
//   - every other refusal is a 400 invalid_json, unknown_field naming a member
//     the body has, or invalid_field naming a member path the body has;
//   - an accepted body keeps every member it sent with its value, and the
//     decoded value's own encoding decodes again to the same value.
func FuzzDecodeRequestBody(f *testing.F) {
	seeded := 0
	for _, r := range docRequests(f) {
		if r.body == "" {
			continue
		}
		for i, k := range bodyKinds {
			if k.path.MatchString(r.path) {
				f.Add(uint8(i), []byte(r.body))
				seeded++
			}
		}
	}
	if seeded < 50 {
		f.Fatalf("only %d seeds from the docs' examples", seeded)
	}
	for i, s := range []string{`{}`, `null`, `[]`, `{"a":1}`, `{"nonce":"00"}`, ` {} `, `{}{}`, ``, `{"result":"\ud800"}`,
		`{"reward":{"agent_credit":1.5}}`, `{"payload":{"x":[1,{"y":"\uFDD0"}]}}`, `{"capabilities_granted":[1]}`,
		`{"input":{"a":1,"a":2}}`, `{"settlement":{"request":{"network":7}}}`, `{"":""}`} {
		f.Add(uint8(i), []byte(s))
	}
	s := &Server{bodyLimit: fuzzBodyLimit}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		k := bodyKinds[int(kind)%len(bodyKinds)]
		got := k.new()
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		err := s.decodeJSON(httptest.NewRecorder(), r, got)
		if len(body) > fuzzBodyLimit {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusRequestEntityTooLarge || e.Code != codeBodyTooLarge {
				t.Fatalf("%s: %d-byte body: %v, want 413 body_too_large", k.route, len(body), err)
			}
			return
		}
		want := k.new()
		werr := decodeBody(body, want)
		if !sameError(err, werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %q: decodeJSON %v %#v, decodeBody %v %#v", k.route, body, err, got, werr, want)
		}
		if ierr := clientError(ijson.Check(body)); ierr != nil && !sameError(err, ierr) {
			t.Fatalf("%s: %q: %v, but ijson.Check says %v", k.route, body, err, ierr)
		}
		if err != nil {
			checkClientError(t, body, err)
			return
		}
		checkRoundTrip(t, body, got, k.new)
	})
}

// sameError reports whether a and b are the same outcome: both nil, or client
// errors with equal status, code, field and message.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return a.Error() == b.Error()
	}
	return *ea == *eb
}
