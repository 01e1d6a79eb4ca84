package events

import (
	"encoding/json"
	"testing"
)

// TestPeerPayloadSchema freezes the JSON of the peer payloads: field names and
// types are a persisted schema and must never change.
func TestPeerPayloadSchema(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		v    any
		want string
	}{
		{PeerConnected{Kind: PeerKindLeaf, Remote: "127.0.0.1:7422", ServerID: s("NABC"), Name: s("hub")},
			`{"kind":"leaf","remote":"127.0.0.1:7422","server_id":"NABC","name":"hub"}`},
		{PeerConnected{Kind: PeerKindLeaf, Remote: "hub.example:7422"},
			`{"kind":"leaf","remote":"hub.example:7422","server_id":null,"name":null}`},
		{PeerDisconnected{Kind: PeerKindLeaf, Remote: "127.0.0.1:7422", Name: s("hub")},
			`{"kind":"leaf","remote":"127.0.0.1:7422","server_id":null,"name":"hub"}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T = %s\n want %s", tc.v, got, tc.want)
		}
	}
}
