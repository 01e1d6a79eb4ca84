package http

import (
	"container/list"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/julienschmidt/httprouter"
	"golang.org/x/time/rate"
)

// Rate limits (docs/api.md: 429 rate_limited with Retry-After; docs/limits.md).
//
// Each token has a token bucket on the routes that cost the node most per
// request (rateLimitedRoute): every authenticated POST, which appends to the
// chain, calls the registry or runs MCP tools, the registry reads, which call
// out, and the event log's query and export, which read the store. The other
// reads are answered from the read models, bounded by the list slots and
// the handler time; GET /v1/health and the stream's upgrade are never limited
// (the stream has its own cap of clients per token instead).
//
// Separately, each client address has a bucket of failed authentications: once
// an address has spent it, its requests are refused with 429 before their
// token is even looked at, so a client guessing tokens gets at most
// authFailRate guesses a second however fast it sends.
const (
	// DefaultRateLimit and DefaultRateBurst are the defaults of
	// Options.RateLimit and Options.RateBurst: high enough that one token driving
	// civnode bench (64 clients, about 10,000 creates or 6,000 event pages a
	// second on the reference machine) is never throttled, so that the limit
	// stops a runaway client before it takes the whole node, not a busy one.
	DefaultRateLimit = 20000
	DefaultRateBurst = 2 * DefaultRateLimit

	// authFailRate and authFailBurst bound the failed authentications of one
	// client address: a burst of 100 lets a fleet of agents that restarts with
	// a stale token see its 401s, and a sustained stream of failures is then
	// admitted at 10 a second.
	authFailRate  = rate.Limit(10)
	authFailBurst = 100

	// maxLimiterKeys bounds the buckets kept per kind (tokens, addresses); the
	// least recently used goes first. Tokens are bounded by those issued, but
	// addresses are not.
	maxLimiterKeys = 10000
	// limiterIdle is how long an unused bucket is kept at least. Past it (and
	// past the time its bucket takes to refill), dropping it loses nothing: a new
	// one starts as full as the old one would be.
	limiterIdle = 10 * time.Minute
)

// keyedLimiters is a token bucket per key (a token id, a client address),
// created on first use and dropped when idle or when more than max keys are in
// use. Every operation on a bucket holds mu, so a look and a take are one step.
type keyedLimiters struct {
	limit rate.Limit
	burst int
	max   int
	idle  time.Duration
	now   func() time.Time // time.Now; tests set a clock

	mu    sync.Mutex
	lru   *list.List // of *limiterEntry, least recently used first
	byKey map[string]*list.Element
	size  atomic.Int64 // len(byKey), read without mu
}

type limiterEntry struct {
	key  string
	lim  *rate.Limiter
	last time.Time // last use
	// over is set from the key's first refusal until its bucket is full
	// again, so that refusals are logged once per episode, not per request.
	over bool
}

// newKeyedLimiters returns limiters of limit a second with burst, keeping at
// most maxKeys keys.
func newKeyedLimiters(limit rate.Limit, burst, maxKeys int) *keyedLimiters {
	idle := max(limiterIdle, seconds(float64(burst)/float64(limit)))
	return &keyedLimiters{limit: limit, burst: burst, max: maxKeys, idle: idle, now: time.Now,
		lru: list.New(), byKey: make(map[string]*list.Element)}
}

// take spends one token of key's bucket. When the bucket is empty it spends
// nothing and returns how long until a token is there; first is set on the
// first refusal since the bucket was last full.
func (k *keyedLimiters) take(key string) (wait time.Duration, first bool) {
	return k.takeN(key, 1)
}

// takeN spends n tokens of key's bucket at once (the further messages of a
// JSON-RPC batch), or, when it holds fewer, none, and returns how long until
// it holds n; first is as for take.
func (k *keyedLimiters) takeN(key string, n int) (wait time.Duration, first bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	e := k.entry(key, now)
	if wait = k.waitLocked(e, now, n); wait > 0 {
		first, e.over = !e.over, true
		return wait, first
	}
	e.lim.AllowN(now, n)
	return 0, false
}

// spend spends one token of key's bucket if it has one, and reports whether
// that emptied it (first: the key is now refused, and was not before).
func (k *keyedLimiters) spend(key string) (first bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	e := k.entry(key, now)
	e.lim.AllowN(now, 1)
	if k.waitLocked(e, now, 1) > 0 && !e.over {
		e.over = true
		return true
	}
	return false
}

// wait is how long until key's bucket has a token, without spending one or
// creating a bucket: zero for a key with none.
func (k *keyedLimiters) wait(key string) time.Duration {
	if k.size.Load() == 0 {
		return 0 // the usual case: no address has failed
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	el, ok := k.byKey[key]
	if !ok {
		return 0
	}
	return k.waitLocked(el.Value.(*limiterEntry), k.now(), 1)
}

// waitLocked is how long until e has n whole tokens. A bucket that has
// filled up again ends e's episode of refusals.
func (k *keyedLimiters) waitLocked(e *limiterEntry, now time.Time, n int) time.Duration {
	tokens := e.lim.TokensAt(now)
	if tokens >= float64(k.burst) {
		e.over = false
	}
	if tokens >= float64(n) {
		return 0
	}
	return seconds((float64(n) - tokens) / float64(k.limit))
}

// maxWait bounds the durations computed from a limit, so that a limit of
// almost nothing does not overflow a time.Duration.
const maxWait = 100 * 365 * 24 * time.Hour

// seconds converts s seconds to a Duration, rounded up, at most maxWait.
func seconds(s float64) time.Duration {
	if s >= maxWait.Seconds() {
		return maxWait
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// entry returns key's bucket, marked used now, creating it (and dropping idle
// and surplus ones) if there is none.
func (k *keyedLimiters) entry(key string, now time.Time) *limiterEntry {
	if el, ok := k.byKey[key]; ok {
		e := el.Value.(*limiterEntry)
		e.last = now
		k.lru.MoveToBack(el)
		return e
	}
	for front := k.lru.Front(); front != nil; front = k.lru.Front() {
		e := front.Value.(*limiterEntry)
		if k.lru.Len() < k.max && now.Sub(e.last) < k.idle {
			break
		}
		k.lru.Remove(front)
		delete(k.byKey, e.key)
	}
	e := &limiterEntry{key: key, lim: rate.NewLimiter(k.limit, k.burst), last: now}
	k.byKey[key] = k.lru.PushBack(e)
	k.size.Store(int64(len(k.byKey)))
	return e
}

// rateLimitedRoute is the one rule for which routes the per-token limit
// covers: every authenticated POST, the registry proxy's routes, and the
// routes marked routeLimited (the event log's query and export).
func rateLimitedRoute(method string, flags routeFlags) bool {
	if flags&routePublic != 0 {
		return false
	}
	return method == http.MethodPost || flags&(routeRegistry|routeLimited) != 0
}

// limitRate admits a request within its token's rate limit and answers the
// rest 429 rate_limited with Retry-After. It runs after requireAuth, so the
// token is known, and before the handler reads anything.
func (s *Server) limitRate(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		a, _ := authenticatedActor(r.Context())
		if wait, first := s.tokenLimits.take(a.TokenID); wait > 0 {
			if first {
				s.logger.LogAttrs(r.Context(), slog.LevelWarn, "token over its rate limit; refusing its requests with 429",
					slog.String(logkey.TokenID, a.TokenID), slog.Float64(logkey.PerS, float64(s.tokenLimits.limit)),
					slog.Int(logkey.Burst, s.tokenLimits.burst))
			}
			s.writeError(w, r, rateLimited(wait, fmt.Sprintf(
				"this token is over its rate limit (requests a second: %g, at once: %d); retry after Retry-After seconds",
				float64(s.tokenLimits.limit), s.tokenLimits.burst)))
			return
		}
		next(w, r, ps)
	}
}

// refuseFailingAddress answers 429 to a request from an address that has
// spent its failed authentications, before its token is looked at. It reports
// whether it did.
func (s *Server) refuseFailingAddress(w http.ResponseWriter, r *http.Request) bool {
	if s.authFails.size.Load() == 0 {
		return false // the usual case: no address has failed, nor has its address to be parsed
	}
	wait := s.authFails.wait(clientAddress(s.clientAddr(r)))
	if wait == 0 {
		return false
	}
	s.writeError(w, r, rateLimited(wait, "too many failed authentications from this address; retry after Retry-After seconds"))
	return true
}

// noteAuthFailure spends one of the address's failed authentications.
func (s *Server) noteAuthFailure(r *http.Request) {
	addr := clientAddress(s.clientAddr(r))
	if s.authFails.spend(addr) {
		s.logger.LogAttrs(r.Context(), slog.LevelWarn, "address over its limit of failed authentications; refusing its requests with 429",
			slog.String(logkey.Address, addr), slog.Float64(logkey.PerS, float64(authFailRate)), slog.Int(logkey.Burst, authFailBurst))
	}
}

// clientAddress is the key of a client's per-address buckets: the client's
// IP address (remote is IP:port or, named by a trusted proxy, a bare IP)
// without its port, and for IPv6 its /64, since one host commonly holds a
// whole /64. A remote address that is neither (the control socket's peer
// name) is its own key.
func clientAddress(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return remote
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// retryAfter renders a wait as Retry-After's whole seconds, at least 1
// (docs/api.md).
func retryAfter(wait time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10)
}
