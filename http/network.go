package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/stream"
)

// networkStatus is GET /v1/client/network/status (docs/api.md): the embedded NATS
// server, its leaf-node links and the live stream's clients. Without NATS
// (Options.Stream nil) it is nats.enabled false and zeros.
type networkStatus struct {
	NATS  networkNATS         `json:"nats"`
	Leafs []stream.LeafStatus `json:"leafs"`
	// StreamClients is the live subscriptions: WebSocket clients of
	// /v1/stream, including those still replaying.
	StreamClients int `json:"stream_clients"`
	// SlowConsumerDrops counts the stream clients closed for falling behind:
	// those whose buffer overflowed (1008) and those that took no data for the
	// write timeout.
	SlowConsumerDrops uint64 `json:"slow_consumer_drops"`
	// Published and PublishErrors count the event messages handed to NATS and
	// those NATS refused (the log keeps them either way).
	Published     uint64 `json:"published"`
	PublishErrors uint64 `json:"publish_errors"`
}

// networkNATS is the embedded NATS server; only enabled when there is none.
type networkNATS struct {
	Enabled bool `json:"enabled"`
	*stream.NATSStatus
	Subjects *natsSubjects `json:"subjects,omitempty"`
}

// natsSubjects are the subjects an observer subscribes to (docs/streaming.md).
type natsSubjects struct {
	Events  string `json:"events"`
	Exports string `json:"exports"`
}

// handleNetworkStatus answers GET /v1/client/network/status.
func (s *Server) handleNetworkStatus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return writeJSON(w, s.networkStatus())
}

func (s *Server) networkStatus() networkStatus {
	st := s.streams.stream
	if st == nil {
		return networkStatus{Leafs: []stream.LeafStatus{}}
	}
	status := st.Status()
	leafs := status.Leafs
	if leafs == nil {
		leafs = []stream.LeafStatus{}
	}
	did := s.log.NodeDID()
	return networkStatus{
		NATS: networkNATS{Enabled: true, NATSStatus: &status.NATS, Subjects: &natsSubjects{
			Events: stream.EventSubject(did, ">"), Exports: stream.ExportsSubject(did)}},
		Leafs:             leafs,
		StreamClients:     status.StreamClients,
		SlowConsumerDrops: status.SlowDrops + s.streams.writeDrops.Load(),
		Published:         status.Published,
		PublishErrors:     status.PublishErrors,
	}
}

// stateNetworkOf summarises the network status for GET /v1/state: status is
// not_configured without NATS, online when every leaf link is up (or there is
// none), degraded when one is down; peers counts the leaf links that are up.
func stateNetworkOf(n networkStatus) stateNetwork {
	out := stateNetwork{Status: "not_configured", NATS: n.NATS, Details: "/v1/client/network/status"}
	if !n.NATS.Enabled {
		return out
	}
	out.Status = "online"
	for _, l := range n.Leafs {
		if l.Connected {
			out.Peers++
		} else {
			out.Status = "degraded"
		}
	}
	return out
}
