package commands_test

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// TestPeersRecord: a link that comes up is peer.connected, one that goes down
// peer.disconnected, each with the remote's address, and a server id or name
// the link did not learn is null rather than "".
func TestPeersRecord(t *testing.T) {
	l, err := eventlog.Open(eventlog.Options{InMemory: true,
		Key:    ed25519.NewKeyFromSeed([]byte("civnode-commands-peers-seed-32b!")),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peers := commands.NewPeers(l)
	ctx := context.Background()
	for _, tt := range []struct {
		link         commands.PeerLink
		typ, payload string
	}{
		{commands.PeerLink{Connected: true, Kind: "leaf", Remote: "10.0.0.2:7422", ServerID: "NABC", Name: "hub"},
			events.TypePeerConnected, `{"kind":"leaf","name":"hub","remote":"10.0.0.2:7422","server_id":"NABC"}`},
		{commands.PeerLink{Kind: "leaf", Remote: "10.0.0.2:7422"},
			events.TypePeerDisconnected, `{"kind":"leaf","name":null,"remote":"10.0.0.2:7422","server_id":null}`},
	} {
		ev, err := peers.Record(ctx, tt.link)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != tt.typ || string(ev.Payload) != tt.payload {
			t.Errorf("%+v: recorded %s %s, want %s %s", tt.link, ev.Type, ev.Payload, tt.typ, tt.payload)
		}
	}
}
