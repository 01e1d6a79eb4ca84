package commands

import (
	"context"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// PeerLink is a change of one of the node's NATS links (a leaf link) as its
// stream server saw it: Connected is whether the link came up or went down.
// ServerID and Name are the remote server's, "" when it did not give them.
type PeerLink struct {
	Connected bool
	Kind      string
	Remote    string
	ServerID  string
	Name      string
}

// Peers records the node's links on its chain: a link that came up is
// peer.connected, one that went down peer.disconnected. The events record
// what the node observed; no state can refuse one, so Record appends without
// a decision.
type Peers struct{ log *eventlog.Log }

// NewPeers returns the command that records links on l.
func NewPeers(l *eventlog.Log) *Peers { return &Peers{log: l} }

// Record appends the event for c. Its error names the event type.
func (p *Peers) Record(ctx context.Context, c PeerLink) (eventlog.Event, error) {
	draft := eventlog.Draft{Type: events.TypePeerDisconnected, Payload: events.PeerDisconnected{
		Kind: c.Kind, Remote: c.Remote, ServerID: optional(c.ServerID), Name: optional(c.Name),
	}}
	if c.Connected {
		draft = eventlog.Draft{Type: events.TypePeerConnected, Payload: events.PeerConnected{
			Kind: c.Kind, Remote: c.Remote, ServerID: optional(c.ServerID), Name: optional(c.Name),
		}}
	}
	evs, err := p.log.Append(ctx, draft)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("append %s: %w", draft.Type, err)
	}
	return evs[0], nil
}

// optional is nil for "", which a payload writes as null.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
