package servicenet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func cardRegistry(t *testing.T, status *atomic.Int32) *fakeRegistry {
	return newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if s := status.Load(); s != 0 {
			writeJSON(w, int(s), `{}`)
			return
		}
		writeJSON(w, 200, `{"agent_id":"a1","name":"A","input_schema":{"type":"object"}}`)
	})
}

func TestCardCacheTTL(t *testing.T) {
	var status atomic.Int32
	f := cardRegistry(t, &status)
	clk := &clock{now: testNow}
	cfg := testConfig(f)
	cfg.Now = clk.Now
	cfg.CardTTL = 0 // the default, 60s
	c, _ := newTestClient(t, cfg)
	ctx := context.Background()

	for range 3 {
		if _, err := c.Card(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
	}
	if f.count() != 1 {
		t.Fatalf("%d fetches within the TTL, want 1", f.count())
	}
	clk.advance(59 * time.Second)
	c.Card(ctx, "a1")
	if f.count() != 1 {
		t.Fatal("card fetched again before its TTL")
	}
	clk.advance(time.Second)
	if _, err := c.Card(ctx, "a1"); err != nil || f.count() != 2 {
		t.Fatalf("after the TTL: %d fetches, %v; want a second fetch", f.count(), err)
	}
}

func TestCardCacheKeepsOnlySuccess(t *testing.T) {
	var status atomic.Int32
	status.Store(503)
	f := cardRegistry(t, &status)
	cfg := testConfig(f)
	cfg.CardTTL = time.Hour
	c, _ := newTestClient(t, cfg)
	ctx := context.Background()
	for range 2 {
		if _, err := c.Card(ctx, "a1"); err == nil {
			t.Fatal("503 gave a card")
		}
	}
	if f.count() != 2 {
		t.Fatalf("%d fetches, want a failure never cached", f.count())
	}
	status.Store(0)
	c.Card(ctx, "a1")
	c.Card(ctx, "a1")
	if f.count() != 3 {
		t.Fatalf("%d fetches, want the success cached", f.count())
	}
}

func TestCardCacheDisabled(t *testing.T) {
	var status atomic.Int32
	f := cardRegistry(t, &status)
	c, _ := newTestClient(t, testConfig(f)) // CardTTL -1
	c.Card(context.Background(), "a1")
	c.Card(context.Background(), "a1")
	if f.count() != 2 {
		t.Fatalf("%d fetches with caching off, want 2", f.count())
	}
}

func TestCardCacheReturnsCopies(t *testing.T) {
	var status atomic.Int32
	f := cardRegistry(t, &status)
	cfg := testConfig(f)
	cfg.CardTTL = time.Hour
	c, _ := newTestClient(t, cfg)
	first, _ := c.Card(context.Background(), "a1")
	copy(first.InputSchema, "XXXXXXXX")
	second, _ := c.Card(context.Background(), "a1")
	if string(second.InputSchema) != `{"type":"object"}` {
		t.Fatalf("cached card edited through a caller's copy: %s", second.InputSchema)
	}
}

// waitForWaiters blocks until n callers have joined the fetch of agentID.
func waitForWaiters(t *testing.T, cc *cardCache, agentID string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cc.mu.Lock()
		f := cc.inflight[agentID]
		joined := f != nil && f.waiters >= n
		cc.mu.Unlock()
		if joined {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers did not gather on one fetch", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCardCacheConcurrentMissesShareOneFetch runs through real HTTP: a burst
// of callers of one cold agent reaches the registry once.
func TestCardCacheConcurrentMissesShareOneFetch(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		<-release
		writeJSON(w, 200, `{"agent_id":"a1","name":"A","pricing":{"currency":"USDC"}}`)
	})
	cfg := testConfig(f)
	cfg.CardTTL = time.Hour
	c, _ := newTestClient(t, cfg)
	t.Cleanup(open) // before the server closes, should the test stop early

	const callers = 20
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			card, err := c.Card(context.Background(), "a1")
			if err == nil && (!card.RequiresPayment || card.AgentID != "a1") {
				err = fmt.Errorf("card %+v", card)
			}
			errs <- err
		})
	}
	waitForWaiters(t, c.cards, "a1", callers-1)
	open()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.count() != 1 {
		t.Fatalf("%d fetches for %d concurrent callers, want 1", f.count(), callers)
	}
}

// TestCardCacheStarterCancelled: the caller that started a fetch gives up;
// the callers still waiting fetch again rather than inherit its cancellation.
func TestCardCacheStarterCancelled(t *testing.T) {
	cc := newCardCache(time.Hour, 8, func() time.Time { return testNow })
	started := make(chan struct{})
	var fetches atomic.Int32
	fetch := func(ctx context.Context) (Card, error) {
		if fetches.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			return Card{}, fmt.Errorf("registry call: %w", ctx.Err())
		}
		return Card{AgentID: "a1"}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	starterErr := make(chan error, 1)
	go func() {
		_, err := cc.get(ctx, "a1", fetch)
		starterErr <- err
	}()
	<-started
	follower := make(chan error, 1)
	go func() {
		card, err := cc.get(context.Background(), "a1", fetch)
		if err == nil && card.AgentID != "a1" {
			err = errors.New("wrong card")
		}
		follower <- err
	}()
	waitForWaiters(t, cc, "a1", 1)
	cancel()
	if err := <-starterErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("starter: %v, want its cancellation", err)
	}
	if err := <-follower; err != nil {
		t.Fatalf("follower: %v, want the card of a second fetch", err)
	}
	if fetches.Load() != 2 {
		t.Fatalf("%d fetches, want 2", fetches.Load())
	}
}

func TestCardCacheIsBounded(t *testing.T) {
	clk := &clock{now: testNow}
	cc := newCardCache(time.Minute, 4, clk.Now)
	put := func(id string) { cc.store(id, Card{AgentID: id}) }
	cached := func(id string) bool { _, ok := cc.entries[id]; return ok }

	put("old")
	clk.advance(2 * time.Minute) // "old" has expired
	for _, id := range []string{"b", "c", "d"} {
		put(id)
		clk.advance(time.Second)
	}
	put("e") // full: the expired card goes first
	if cached("old") || !cached("b") || len(cc.entries) != 4 {
		t.Fatalf("after e: %v", keys(cc))
	}
	put("f") // full, nothing expired: the oldest goes
	if cached("b") || !cached("c") || !cached("f") || len(cc.entries) != 4 {
		t.Fatalf("after f: %v", keys(cc))
	}
	put("f") // refreshing a cached card evicts nothing
	if len(cc.entries) != 4 || !cached("c") {
		t.Fatalf("after f again: %v", keys(cc))
	}

	big := newCardCache(time.Hour, maxCachedCards, clk.Now)
	for i := range maxCachedCards + 50 {
		big.store(fmt.Sprint("agent-", i), Card{})
	}
	if len(big.entries) != maxCachedCards {
		t.Fatalf("%d cards cached, want at most %d", len(big.entries), maxCachedCards)
	}
}

func keys(cc *cardCache) []string {
	var ks []string
	for k := range cc.entries {
		ks = append(ks, k)
	}
	return ks
}

// FuzzDecodeCard holds that an accepted card is the agent asked for and that
// its kept members are JSON objects or absent.
func FuzzDecodeCard(f *testing.F) {
	for _, s := range []string{
		`{"agent_id":"a1","name":"A"}`,
		`{"agent_id":"a1","name":"A","input_schema":null,"pricing":{"x":1},"security_schemes":{}}`,
		`{"agent_id":"a1","name":"A","requires_payment":false,"pricing":{}}`,
		`{"agent_id":"a2","name":"A"}`, `null`, `[]`, `{"agent_id":1}`, `{"agent_id":"a1","name":"A","pricing":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCard(data, "a1")
		if err != nil {
			return
		}
		if c.AgentID != "a1" {
			t.Fatalf("card of %q accepted for a1", c.AgentID)
		}
		for _, raw := range []json.RawMessage{c.InputSchema, c.Pricing, c.SecuritySchemes} {
			var m map[string]any
			if raw != nil && (json.Unmarshal(raw, &m) != nil || m == nil) {
				t.Fatalf("kept member %s is not an object", raw)
			}
		}
		if c.RequiresOAuth != (c.SecuritySchemes != nil) {
			t.Fatal("RequiresOAuth disagrees with security_schemes")
		}
	})
}
