package events

// Event types of the node's links to other NATS servers (docs/events.md): a leaf
// link (serve --nats-leaf) going up or down. They are facts about the node's
// connectivity, appended by the node itself, so an observer reading the chain
// knows when its events could reach a hub.
const (
	// TypePeerConnected: a link to a remote NATS server came up.
	TypePeerConnected = "peer.connected"
	// TypePeerDisconnected: that link went down.
	TypePeerDisconnected = "peer.disconnected"
)

// PeerKindLeaf is the Kind of a leaf-node link, the only kind so far.
const PeerKindLeaf = "leaf"

// PeerConnected is the payload of peer.connected. Remote never holds
// credentials: they may be in the --nats-leaf URL, never in the chain.
type PeerConnected struct {
	// Kind is the kind of link: "leaf".
	Kind string `json:"kind"`
	// Remote is the remote server's address, host:port.
	Remote string `json:"remote"`
	// ServerID is the remote server's NATS server id, when the link learns it.
	ServerID *string `json:"server_id"`
	// Name is the remote server's name, when it sent one.
	Name *string `json:"name"`
}

// PeerDisconnected is the payload of peer.disconnected: the same link, as it
// was reported when it came up.
type PeerDisconnected struct {
	Kind     string  `json:"kind"`
	Remote   string  `json:"remote"`
	ServerID *string `json:"server_id"`
	Name     *string `json:"name"`
}
