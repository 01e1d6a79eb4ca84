package stream

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// Message is one delivered event.
type Message struct {
	Seq  uint64
	Type string
	Raw  []byte // the event JSON as stored; do not modify
}

// Subscription is one live consumer (a WebSocket client): a bounded channel
// that the server's one NATS subscription (dispatch, on one NATS goroutine)
// hands each matching event to without ever waiting. Messages arrive in the
// order they were published, which is seq order.
type Subscription struct {
	srv    *Server
	filter string // "", an exact type, or a prefix with its dot ("mission.")
	prefix bool
	ch     chan Message

	mu    sync.Mutex
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
	sub := &Subscription{srv: s, filter: filter, ch: make(chan Message, max(buffer, 1))}
	if p, ok := strings.CutSuffix(filter, "*"); ok {
		sub.filter, sub.prefix = p, true
	}
	// Registered before Subscribe returns: an event committed after that is
	// published after it, and dispatch, which sees events in publication
	// order, finds the subscription in the set.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.subs[sub] = struct{}{}
	s.publishLive()
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

// matches reports whether an event of type typ is for sub.
func (sub *Subscription) matches(typ string) bool {
	switch {
	case sub.filter == "":
		return true
	case sub.prefix:
		return strings.HasPrefix(typ, sub.filter)
	default:
		return typ == sub.filter
	}
}

// dispatch runs on the fanout subscription's NATS goroutine, once an event,
// and offers the event to every live subscription that wants it.
func (s *Server) dispatch(m *nats.Msg) {
	typ, ours := strings.CutPrefix(m.Subject, s.events)
	seq, err := strconv.ParseUint(m.Header.Get(HeaderSeq), 10, 64)
	if err != nil || !ours || typ == "" {
		// Only the node's publisher may publish on its subjects (see
		// natsUsers); anything else is dropped, not passed to an observer.
		s.log.Warn("dropped a message on the event subjects that the node did not publish", logkey.Subject, m.Subject)
		return
	}
	msg := Message{Seq: seq, Type: typ, Raw: m.Data}
	live := s.live.Load()
	if live == nil {
		return
	}
	for _, sub := range *live {
		if sub.matches(msg.Type) {
			sub.offer(msg)
		}
	}
}

// offer hands msg to the consumer, or ends the subscription if its channel is
// full.
func (sub *Subscription) offer(msg Message) {
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

// end closes the channel once, with err as the reason, and removes the
// subscription from the live set. A send in offer and the close here both
// hold mu, so a message is never sent on a closed channel.
func (sub *Subscription) end(err error) {
	sub.mu.Lock()
	if sub.ended {
		sub.mu.Unlock()
		return
	}
	sub.ended, sub.err = true, err
	close(sub.ch)
	sub.mu.Unlock()
	if errors.Is(err, ErrSlowConsumer) {
		sub.srv.slowDrops.Add(1)
	}
	sub.srv.forget(sub)
}

// forget drops sub from the live set.
func (s *Server) forget(sub *Subscription) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.publishLive()
	s.mu.Unlock()
}

// publishLive replaces the set dispatch reads; s.mu is held.
func (s *Server) publishLive() {
	live := make([]*Subscription, 0, len(s.subs))
	for sub := range s.subs {
		live = append(live, sub)
	}
	s.live.Store(&live)
}

// endAll ends every live subscription with err.
func (s *Server) endAll(err error) {
	s.mu.Lock()
	subs := make([]*Subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	for _, sub := range subs {
		sub.end(err)
	}
}
