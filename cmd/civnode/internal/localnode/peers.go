package localnode

import (
	"context"
	"log/slog"
	"sync"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/stream"
)

// peerRecorder hands the leaf links' changes to commands.Peers, which records
// them as peer.connected and peer.disconnected. The stream server starts before the log opens and may report a link that
// came up meanwhile, so changes are queued and appended, in the order they
// were reported, once record runs.
type peerRecorder struct {
	logger *slog.Logger
	wake   chan struct{}

	mu      sync.Mutex
	pending []stream.PeerChange
}

func newPeerRecorder(logger *slog.Logger) *peerRecorder {
	return &peerRecorder{logger: logger, wake: make(chan struct{}, 1)}
}

// note is stream.Options.OnPeer: it queues and returns at once.
func (p *peerRecorder) note(c stream.PeerChange) {
	p.mu.Lock()
	p.pending = append(p.pending, c)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// record appends queued changes through peers until ctx is done, then
// appends what is still queued and returns.
func (p *peerRecorder) record(ctx context.Context, peers *commands.Peers) {
	for {
		p.mu.Lock()
		batch := p.pending
		p.pending = nil
		p.mu.Unlock()
		for _, c := range batch {
			link := commands.PeerLink{Connected: c.Connected, Kind: c.Kind, Remote: c.Remote, ServerID: c.ServerID, Name: c.Name}
			if _, err := peers.Record(context.WithoutCancel(ctx), link); err != nil {
				// The link's state is still in the network status; only the
				// record of the change is lost, and a failed log stops the
				// node's writes anyway.
				p.logger.Error("record a peer link", logkey.Remote, c.Remote, logkey.Err, err)
			}
		}
		select {
		case <-p.wake:
		case <-ctx.Done():
			if p.queued() == 0 {
				return
			}
		}
	}
}

func (p *peerRecorder) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending)
}
