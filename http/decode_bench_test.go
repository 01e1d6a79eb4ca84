package http

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/civnode/civnode/commands"
)

// benchBodies are the bodies BenchmarkDecodeBody decodes: a typical mission
// create (nested reward, free payload) and a typical identity bootstrap.
var benchBodies = []struct {
	name string
	body []byte
	dst  func() any
}{
	{"mission_create", []byte(`{"title":"Escort the convoy","description":"Escort the ore convoy from the dock to the refinery, keep it whole, and report the route.",` +
		`"publisher":"pub","publisher_kind":"organization","domain":"security","subnet_id":"genesis","zone_id":"dock",` +
		`"required_role":"enforcer","required_faction":"order",` +
		`"reward":{"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5},` +
		`"payload":{"route":["dock","refinery"],"escorts":2,"notes":"Bring the manifest; the harbour master checks it.","cargo":{"ore_t":120,"grade":"B"}}}`),
		func() any { return new(commands.CreateMissionInput) }},
	{"bootstrap", []byte(`{"display_name":"Ada of the Order","public_id":"ada","faction":"order","role":"enforcer",` +
		`"strategy":"cooperative","home_subnet_id":"genesis","home_zone_id":"dock"}`),
		func() any { return new(commands.BootstrapInput) }},
}

// BenchmarkDecodeBody measures one request body through decodeJSON, and beside
// it the limit of a plain validity scan (encoding/json Valid) on the same bytes.
//
//	go test ./http/ -run x -bench DecodeBody -count 6
func BenchmarkDecodeBody(b *testing.B) {
	s := &Server{bodyLimit: 1 << 20}
	for _, bb := range benchBodies {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bb.body)))
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			body := new(bytes.Reader)
			for b.Loop() {
				body.Reset(bb.body)
				r.Body = io.NopCloser(body)
				if err := s.decodeJSON(w, r, bb.dst()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bb.name+"_json_valid", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bb.body)))
			for b.Loop() {
				if !json.Valid(bb.body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
