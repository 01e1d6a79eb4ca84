package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/stream"
)

// peerRecorder appends peer.connected and peer.disconnected for the leaf link.
// The stream server starts before the log opens and may report a link that
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

// record appends queued changes to chain until ctx is done, then appends what
// is still queued and returns.
func (p *peerRecorder) record(ctx context.Context, chain *eventlog.Log) {
	for {
		p.mu.Lock()
		batch := p.pending
		p.pending = nil
		p.mu.Unlock()
		for _, c := range batch {
			p.append(context.WithoutCancel(ctx), chain, c)
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

func (p *peerRecorder) append(ctx context.Context, chain *eventlog.Log, c stream.PeerChange) {
	draft := eventlog.Draft{Type: events.TypePeerDisconnected, Payload: events.PeerDisconnected{
		Kind: c.Kind, Remote: c.Remote, ServerID: optional(c.ServerID), Name: optional(c.Name),
	}}
	if c.Connected {
		draft = eventlog.Draft{Type: events.TypePeerConnected, Payload: events.PeerConnected{
			Kind: c.Kind, Remote: c.Remote, ServerID: optional(c.ServerID), Name: optional(c.Name),
		}}
	}
	if _, err := chain.Append(ctx, draft); err != nil {
		// The link's state is still in the network status; only the record of
		// the change is lost, and a failed log stops the node's writes anyway.
		p.logger.Error("append "+draft.Type, "remote", c.Remote, "err", err)
	}
}

// optional is nil for "", which a payload writes as null.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
