package stream

import (
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Status is what GET /v1/client/network/status and the network object of
// GET /v1/state report.
type Status struct {
	NATS  NATSStatus   `json:"nats"`
	Leafs []LeafStatus `json:"leafs"`
	// StreamClients counts the live subscriptions (WebSocket clients).
	StreamClients int `json:"stream_clients"`
	// SlowDrops counts subscriptions ended with ErrSlowConsumer since start.
	SlowDrops uint64 `json:"slow_consumer_drops"`
	// Published and PublishErrors count the events NATS took and refused since
	// start.
	Published     uint64 `json:"published"`
	PublishErrors uint64 `json:"publish_errors"`
}

// NATSStatus describes the embedded server.
type NATSStatus struct {
	ServerID string `json:"server_id"`
	Version  string `json:"version"`
	// Listen is the NATS client listener, host:port; "" when there is none.
	Listen string `json:"listen"`
	// Connections counts client connections, the node's two in-process ones
	// included.
	Connections int       `json:"connections"`
	Started     time.Time `json:"started"`
}

// LeafStatus is one leaf link: the configured remote, up or down, and any
// other link that is up.
type LeafStatus struct {
	Remote    string `json:"remote"`
	Connected bool   `json:"connected"`
	Name      string `json:"name,omitempty"`
	// Since is when the link came up, while it is up; when it went down, or
	// the server started if it never came up, while it is down. It moves at
	// the leaf poll (Options.LeafPoll), so it is within a second of the fact.
	Since time.Time `json:"since"`
}

// Status reports the server now. Leafs is never nil.
func (s *Server) Status() Status {
	st := Status{
		NATS: NATSStatus{
			ServerID:    s.ns.ID(),
			Version:     server.VERSION,
			Connections: s.ns.NumClients(),
			Started:     s.started,
		},
		Leafs:         []LeafStatus{},
		SlowDrops:     s.slowDrops.Load(),
		Published:     s.published.Load(),
		PublishErrors: s.publishErrors.Load(),
	}
	if a := s.ns.Addr(); a != nil {
		st.NATS.Listen = a.String()
	}
	s.mu.Lock()
	st.StreamClients = len(s.subs)
	for _, l := range s.leafs {
		st.Leafs = append(st.Leafs, LeafStatus{Remote: l.Remote, Connected: true, Name: l.Name, Since: l.since})
	}
	if s.leafRemote != "" && len(st.Leafs) == 0 {
		st.Leafs = append(st.Leafs, LeafStatus{Remote: s.leafRemote, Since: s.leafSince})
	}
	s.mu.Unlock()
	return st
}
