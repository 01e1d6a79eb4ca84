package stream

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/eventlog"
)

// Message is one delivered event.
type Message struct {
	Seq  uint64
	Type string
	Raw  []byte // the event JSON as stored; do not modify
}

// Subscription is one live consumer (a WebSocket client): a NATS subscription
// on the in-process subscriber connection whose callback, one goroutine per
// subscription in NATS's client, hands each message to a bounded channel
// without ever waiting. Messages arrive in the order they were published,
// which is seq order.
type Subscription struct {
	srv    *Server
	prefix int // length of "civnode.<node>.events.", cut to get the type
	ch     chan Message

	mu    sync.Mutex
	ns    *nats.Subscription
	ended bool
	err   error // nil after the consumer's own Close
}

// Subscribe delivers the events published after it returns whose type matches
// filter ("" all; an exact type; or a prefix "mission.*", with eventlog's
// meaning: every type that starts with "mission.", at any depth), in seq order,
// into a channel of capacity buffer (at least 1). Some events published just
// before it returns may be delivered too, so a consumer that also replays the
// log skips the seqs it has already sent. If the channel is full when an event
// arrives, the subscription ends: the channel is closed and Err reports
// ErrSlowConsumer; the publisher never waits. Close ends it.
func (s *Server) Subscribe(filter string, buffer int) (*Subscription, error) {
	if filter != "" && !eventlog.ValidTypeFilter(filter) {
		return nil, fmt.Errorf("subscribe: type filter %q: want a type or a prefix ending in .*", filter)
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	sub := &Subscription{
		srv:    s,
		prefix: len(EventSubject(s.did, "")),
		ch:     make(chan Message, max(buffer, 1)),
	}
	ns, err := s.sub.Subscribe(filterSubject(s.did, filter), sub.deliver)
	if err == nil {
		// The round trip makes the server hold the subscription before
		// Subscribe returns; from then on every published event reaches it.
		err = s.sub.Flush()
	}
	if err != nil {
		if ns != nil {
			_ = ns.Unsubscribe()
		}
		if s.isClosed() {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ns.Unsubscribe()
		return nil, ErrClosed
	}
	s.subs[ns] = sub
	s.mu.Unlock()
	sub.mu.Lock()
	sub.ns = ns
	ended := sub.ended
	sub.mu.Unlock()
	if ended {
		// It overflowed before it was registered: finish the removal end began.
		s.forget(ns)
	}
	return sub, nil
}

// C is the channel of events; it is closed when the subscription ends.
func (sub *Subscription) C() <-chan Message { return sub.ch }

// Err says why C was closed: ErrSlowConsumer, ErrClosed once the server
// stops, or nil while it is open and after the consumer's own Close.
func (sub *Subscription) Err() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.err
}

// Close ends the subscription and closes C. It is safe to call more than once
// and after the subscription ended on its own.
func (sub *Subscription) Close() { sub.end(nil) }

// deliver runs on the subscription's own NATS goroutine.
func (sub *Subscription) deliver(m *nats.Msg) {
	seq, err := strconv.ParseUint(m.Header.Get(HeaderSeq), 10, 64)
	if err != nil || len(m.Subject) <= sub.prefix {
		// Only the node's publisher may publish on its subjects (see
		// natsUsers); anything else is dropped, not passed to an observer.
		sub.srv.log.Warn("dropped a message on the event subjects that the node did not publish", "subject", m.Subject)
		return
	}
	msg := Message{Seq: seq, Type: m.Subject[sub.prefix:], Raw: m.Data}
	sub.mu.Lock()
	if sub.ended {
		sub.mu.Unlock()
		return
	}
	select {
	case sub.ch <- msg:
		sub.mu.Unlock()
		return
	default:
	}
	sub.mu.Unlock()
	sub.end(ErrSlowConsumer)
}

// end closes the channel once, with err as the reason, and removes the NATS
// subscription. A send in deliver and the close here both hold mu, so a
// message is never sent on a closed channel.
func (sub *Subscription) end(err error) {
	sub.mu.Lock()
	if sub.ended {
		sub.mu.Unlock()
		return
	}
	sub.ended, sub.err = true, err
	close(sub.ch)
	ns := sub.ns
	sub.mu.Unlock()
	if errors.Is(err, ErrSlowConsumer) {
		sub.srv.slowDrops.Add(1)
	}
	if ns != nil {
		sub.srv.forget(ns)
	}
}

// forget unsubscribes ns and drops it from the live set.
func (s *Server) forget(ns *nats.Subscription) {
	s.mu.Lock()
	delete(s.subs, ns)
	s.mu.Unlock()
	// After Close the connection is gone with all its subscriptions.
	_ = ns.Unsubscribe()
}

// endAll ends every live subscription with err.
func (s *Server) endAll(err error) {
	s.mu.Lock()
	subs := make([]*Subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	for _, sub := range subs {
		sub.end(err)
	}
}
