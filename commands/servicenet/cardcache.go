package servicenet

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"
)

// cardCache keeps agent cards for a short time. Every invoke reads the card
// first (payment and OAuth are decided from it), so without the cache each
// invoke would cost the registry two calls. Only cards are kept, never
// failures: a registry that was down must be asked again at once.
//
// Concurrent misses for one agent share a single fetch, so a burst of invokes
// of a cold agent reaches the registry once.
type cardCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu       sync.Mutex
	entries  map[string]cachedCard
	inflight map[string]*cardFetch
}

type cachedCard struct {
	card    Card
	expires time.Time
}

// cardFetch is one fetch in flight; done is closed when card and err are set.
type cardFetch struct {
	done chan struct{}
	card Card
	err  error
	// waiters counts the callers that joined; under cc.mu. Only the tests
	// read it, to know a burst has gathered before the fetch returns.
	waiters int
}

func newCardCache(ttl time.Duration, max int, now func() time.Time) *cardCache {
	if max < 1 {
		max = 1
	}
	return &cardCache{
		ttl:      ttl,
		max:      max,
		now:      now,
		entries:  make(map[string]cachedCard),
		inflight: make(map[string]*cardFetch),
	}
}

// get returns the card of agentID, from the cache while it is fresh, else from
// fetch. The caller receives its own copy: a caller editing a card must not
// edit the cached one.
func (cc *cardCache) get(ctx context.Context, agentID string, fetch func(context.Context) (Card, error)) (Card, error) {
	for {
		cc.mu.Lock()
		if e, ok := cc.entries[agentID]; ok && cc.now().Before(e.expires) {
			cc.mu.Unlock()
			return cloneCard(e.card), nil
		}
		if f, ok := cc.inflight[agentID]; ok {
			f.waiters++
			cc.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return Card{}, callerDone(ctx)
			}
			// The fetch ran under its starter's context. If the starter gave
			// up, that is no answer for a caller still waiting: try again.
			if errors.Is(f.err, context.Canceled) && ctx.Err() == nil {
				continue
			}
			return cloneCard(f.card), f.err
		}
		f := &cardFetch{done: make(chan struct{})}
		cc.inflight[agentID] = f
		cc.mu.Unlock()
		return cc.run(ctx, agentID, f, fetch)
	}
}

// run performs f for the callers waiting on it and caches a success.
func (cc *cardCache) run(ctx context.Context, agentID string, f *cardFetch, fetch func(context.Context) (Card, error)) (Card, error) {
	defer func() {
		cc.mu.Lock()
		delete(cc.inflight, agentID)
		if f.err == nil {
			cc.store(agentID, f.card)
		}
		cc.mu.Unlock()
		close(f.done)
	}()
	f.err = errPanicked // replaced below unless fetch panics
	f.card, f.err = fetch(ctx)
	return cloneCard(f.card), f.err
}

// store caches card; cc.mu is held. When the cache is full it first drops
// the expired cards, then the one closest to expiry, which, with one TTL for
// all, is the oldest.
func (cc *cardCache) store(agentID string, card Card) {
	now := cc.now()
	if _, ok := cc.entries[agentID]; !ok && len(cc.entries) >= cc.max {
		for id, e := range cc.entries {
			if !now.Before(e.expires) {
				delete(cc.entries, id)
			}
		}
		for len(cc.entries) >= cc.max {
			var oldest string
			var at time.Time
			for id, e := range cc.entries {
				if oldest == "" || e.expires.Before(at) {
					oldest, at = id, e.expires
				}
			}
			delete(cc.entries, oldest)
		}
	}
	cc.entries[agentID] = cachedCard{card: cloneCard(card), expires: now.Add(cc.ttl)}
}

// cloneCard copies the card's raw members, which are slices.
func cloneCard(c Card) Card {
	c.InputSchema = bytes.Clone(c.InputSchema)
	c.SecuritySchemes = bytes.Clone(c.SecuritySchemes)
	c.Pricing = bytes.Clone(c.Pricing)
	return c
}
