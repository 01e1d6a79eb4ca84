package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/stream"
)

// Limits of GET /v1/stream; docs/limits.md and docs/streaming.md list them.
const (
	// streamBuffer is how many events a client may fall behind the log before it
	// is closed with 1008. It bounds the memory one client holds (times the
	// event size), and at 1,000 events/s it is about a second of lag on top of
	// what the socket buffers hold.
	streamBuffer = 1024
	// streamWriteTimeout bounds one message's write: a client whose connection
	// takes nothing for this long is cut off, so a stalled TCP peer cannot hold
	// a goroutine and a subscription for ever.
	streamWriteTimeout = 10 * time.Second
	// streamPingInterval and streamPongTimeout are the keepalive: a ping every
	// interval, and a client that does not answer one within the timeout is
	// closed. Idle proxies and NATs keep a connection with traffic every 30 s.
	streamPingInterval = 30 * time.Second
	streamPongTimeout  = 15 * time.Second
	// streamReplayEvents and streamReplayBytes bound one page of a replay: the
	// page is copied out of the store and the store's iterator released before
	// the page is written, so a slow client never pins the store's files.
	streamReplayEvents = 1000
	streamReplayBytes  = 1 << 20
	// streamReplayRounds bounds the replays of one catch-up. A round ends when
	// the replay reaches the tip it started from; if the live subscription
	// behind it overflowed meanwhile (the writers outran the replay), the next
	// round resumes where the last ended under a fresh subscription. Each round
	// is shorter than the last unless the writers are faster than the client,
	// which is the slow consumer the limit is for.
	streamReplayRounds = 16
)

// DefaultStreamsPerToken is the default of Options.StreamsPerToken: each
// client holds a goroutine, a subscription and up to streamBuffer events, so
// one token's clients are bounded, well above the 100 that civnode bench
// opens with the owner token. A dashboard farm takes a token per dashboard.
const DefaultStreamsPerToken = 256

// Close reasons (RFC 6455 §7.1.6 allows 123 bytes).
const (
	reasonShutdown  = "node shutting down"
	reasonKeepalive = "keepalive: no pong in time"
)

// streamHub is the set of WebSocket clients of GET /v1/stream: it admits them,
// counts what the stream package does not (clients cut off at the write
// deadline), and closes them all with 1001 when Serve shuts down. WebSocket
// connections are hijacked, so http.Server.Shutdown neither closes nor waits
// for them; the hub does both.
type streamHub struct {
	stream *stream.Server // nil: the node runs without NATS and serves no stream
	logger *slog.Logger

	// Limits, fields so tests can shorten them.
	buffer       int
	writeTimeout time.Duration
	pingInterval time.Duration
	pongTimeout  time.Duration
	replayEvents int
	replayBytes  int

	// ctx is canceled by shutdown; every client's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	// writeCtx is canceled streamShutdownWriteGrace after shutdown, so a
	// client stuck in a write does not hold the shutdown up: it bounds the
	// pings, and its cancel fails every client's writes (streamConn.cutOff).
	// It is not ctx: a write cut as shutdown begins would lose the 1001 that
	// shutdown is about to send.
	writeCtx    context.Context
	writeCancel context.CancelFunc

	// perToken caps the clients of one token (0: no cap); open counts them.
	perToken int

	mu      sync.Mutex
	closing bool
	open    map[string]int // token id → clients open
	clients sync.WaitGroup

	// writeDrops counts clients closed because one write did not complete
	// within writeTimeout while their subscription had not (yet) overflowed;
	// the stream package counts those whose subscription overflowed.
	writeDrops atomic.Uint64

	// replayed, if set, is called after each round of a catch-up (tests).
	replayed func(round int)
}

func newStreamHub(st *stream.Server, perToken int, logger *slog.Logger) *streamHub {
	ctx, cancel := context.WithCancel(context.Background())
	writeCtx, writeCancel := context.WithCancel(context.Background())
	return &streamHub{
		stream: st, logger: logger, perToken: perToken, open: make(map[string]int),
		buffer: streamBuffer, writeTimeout: streamWriteTimeout,
		pingInterval: streamPingInterval, pongTimeout: streamPongTimeout,
		replayEvents: streamReplayEvents, replayBytes: streamReplayBytes,
		ctx: ctx, cancel: cancel, writeCtx: writeCtx, writeCancel: writeCancel,
	}
}

// enter admits a client of token unless the hub is shutting down or the
// token has as many clients as it may; a client admitted must call leave.
func (h *streamHub) enter(token string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return errStreamUnavailable
	}
	if h.perToken > 0 && h.open[token] >= h.perToken {
		return tooManyStreams(h.perToken)
	}
	h.open[token]++
	h.clients.Add(1)
	return nil
}

func (h *streamHub) leave(token string) {
	h.mu.Lock()
	if h.open[token]--; h.open[token] <= 0 {
		delete(h.open, token)
	}
	h.mu.Unlock()
	h.clients.Done()
}

// shutdown tells every client to close with 1001 and admits no more.
func (h *streamHub) shutdown() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.cancel()
	time.AfterFunc(streamShutdownWriteGrace, h.writeCancel)
}

// streamShutdownWriteGrace is how long a write in progress at shutdown may
// still run before its connection is closed under it.
const streamShutdownWriteGrace = time.Second

// wait returns once every admitted client has ended.
func (h *streamHub) wait() { h.clients.Wait() }

// tokenFromQuery moves a ?token= bearer token into the Authorization header when
// the request has none, so that requireAuth treats both alike; the header wins
// when both are sent. The parameter is removed from the request whatever
// happens, so that no later reader of the URL (a log line, an error message)
// can see it. A token given twice, or badly escaped, counts as none.
func tokenFromQuery(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		token, rest, found := cutQueryToken(r.URL.RawQuery)
		if found {
			r = r.Clone(r.Context())
			r.URL.RawQuery = rest
			r.RequestURI = r.URL.RequestURI()
			if token != "" && len(r.Header.Values("Authorization")) == 0 {
				r.Header.Set("Authorization", "Bearer "+token)
			}
		}
		next(w, r, ps)
	}
}

// cutQueryToken removes every token pair from a raw query string, leaving the
// other pairs exactly as sent, and returns the token when there was exactly one
// readable one.
func cutQueryToken(raw string) (token, rest string, found bool) {
	if !strings.Contains(raw, "token") {
		return "", raw, false
	}
	var kept []string
	n := 0
	for pair := range strings.SplitSeq(raw, "&") {
		rawName, rawValue, _ := strings.Cut(pair, "=")
		if name, err := url.QueryUnescape(rawName); err != nil || name != "token" {
			kept = append(kept, pair)
			continue
		}
		found = true
		n++
		v, err := url.QueryUnescape(rawValue)
		if err != nil {
			v = ""
		}
		token = v
	}
	if n != 1 {
		token = ""
	}
	return token, strings.Join(kept, "&"), found
}

// handleStream answers GET /v1/stream: a WebSocket on which every committed
// event is one text message, its JSON exactly as stored followed by "\n" (the
// bytes of a GET /v1/events item), in seq order. See docs/streaming.md.
//
// Everything that can be refused is refused before the upgrade, as a JSON error:
// the token (requireAuth), the filters, a request that is not a WebSocket
// handshake, a token that has as many streams open as it may (429
// too_many_streams); the upgrade is not rate-limited. With since= or
// after_seq= the client first gets the log's events
// after that point, then the live ones, with no gap and no duplicate: the
// subscription is taken first, then the log is replayed up to a tip read after
// it, and live events at or below that tip are skipped. Every event above it was
// committed, and so published, after the subscription was in place (the log
// publishes a tip before it calls OnCommit), so it arrives live.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	filter, err := queryFilter(q, "type")
	if err != nil {
		return err
	}
	since, err := querySince(q)
	if err != nil {
		return err
	}
	afterSeq, hasAfter, err := queryAfterSeq(q)
	if err != nil {
		return err
	}
	if hasAfter && !since.IsZero() {
		return invalidField("after_seq", "give since or after_seq, not both")
	}
	if tip := s.log.Tip().Seq; hasAfter && afterSeq > tip {
		return invalidField("after_seq", "after_seq %d is beyond the chain's tip, seq %d", afterSeq, tip)
	}
	if r.Method != http.MethodGet || !isWebSocketUpgrade(r.Header) {
		w.Header().Set("Upgrade", "websocket")
		return errUpgradeRequired
	}
	hub := s.streams
	token := requestActor(r.Context()).TokenID
	if err := hub.enter(token); err != nil {
		return err
	}
	defer hub.leave(token)

	c := &streamClient{hub: hub, log: s.log, filter: filter, floor: afterSeq}
	switch {
	case hasAfter:
		c.replay = true
		if afterSeq > 0 {
			ev, err := s.log.Event(afterSeq)
			if err != nil {
				return fmt.Errorf("stream: read event %d: %w", afterSeq, err)
			}
			c.cursor = ev.Time()
		}
	case !since.IsZero():
		c.replay, c.cursor = true, since
	}
	if c.sub, err = hub.stream.Subscribe(filter, hub.buffer); err != nil {
		if errors.Is(err, stream.ErrClosed) {
			return errStreamUnavailable
		}
		return fmt.Errorf("stream: subscribe: %w", err)
	}
	defer func() { c.sub.Close() }()
	if !c.replay {
		// Live only: events the log committed before the subscription was in
		// place may still be on their way to it (OnCommit runs after the tip
		// moves). They came before the client did, so a tip read now is the
		// floor; every event above it is published after this point.
		c.floor = s.log.Tip().Seq
	}

	// net/http's deadlines for this request stay on the connection once it is
	// hijacked; the stream sets its own bounds (write timeout, keepalive).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	// No origin check: the stream authenticates by bearer token, never by an
	// ambient credential such as a cookie, so a page on another origin can only
	// open it with a token it already has.
	sw := &streamResponse{ResponseWriter: w, timeout: hub.writeTimeout}
	conn, err := websocket.Accept(sw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		// Accept has answered the client (a malformed handshake).
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "stream handshake refused", slog.String(logkey.Err, err.Error()))
		return nil
	}
	c.conn, c.nc = conn, sw.conn
	if c.nc == nil { // not hijacked through sw: cannot happen with net/http
		conn.CloseNow()
		return errors.New("stream: the connection was not hijacked")
	}
	c.nc.upgraded()
	stop := context.AfterFunc(hub.writeCtx, c.nc.cutOff)
	defer stop()
	c.run()
	return nil
}

// queryAfterSeq parses after_seq: a seq number, 0 for the whole chain.
func queryAfterSeq(q url.Values) (seq uint64, ok bool, err error) {
	v, err := queryValue(q, "after_seq")
	if err != nil || v == "" {
		return 0, false, err
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' || i >= 19 {
			return 0, false, invalidField("after_seq", "after_seq must be a seq number (an integer from 0)")
		}
		seq = seq*10 + uint64(c-'0')
	}
	return seq, true, nil
}

// isWebSocketUpgrade reports whether h asks for a WebSocket (RFC 6455 §4.1);
// the rest of the handshake is websocket.Accept's to check.
func isWebSocketUpgrade(h http.Header) bool {
	return headerHasToken(h, "Connection", "upgrade") && headerHasToken(h, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// streamClient is one WebSocket client of GET /v1/stream.
type streamClient struct {
	hub    *streamHub
	log    *eventlog.Log
	conn   *websocket.Conn
	nc     *streamConn // under conn: batches and bounds the writes
	sub    *stream.Subscription
	filter string

	// replay is set with since= or after_seq=: the log is replayed from after
	// cursor (the zero time: from genesis) before the live events.
	replay bool
	cursor time.Time
	// floor is the highest seq the client has had, or was ever to have, from the
	// log: live events at or below it are skipped.
	floor uint64
	// last is the seq of the last event written, which a client dropped as slow
	// resumes after (after_seq=).
	last uint64

	page []byte    // one replay page: messages back to back
	ends []pageEnd // where each message of page ends
}

// run serves the client until it goes, the subscription ends or the server shuts
// down, then closes the connection with the status that says why.
func (c *streamClient) run() {
	// CloseRead reads what the client sends (pongs, its close) and ends its
	// context once the connection is closed. It must not end with the hub:
	// it closes the connection when its context ends, and a shutdown first
	// sends 1001.
	ctx, cancel := context.WithCancel(c.conn.CloseRead(context.Background()))
	defer cancel()
	stop := context.AfterFunc(c.hub.ctx, cancel)
	defer stop()
	pinged := make(chan struct{})
	go func() { defer close(pinged); c.keepalive(ctx) }()
	code, reason := c.serve(ctx)
	if code != 0 {
		_ = c.conn.Close(code, reason)
	}
	_ = c.conn.CloseNow()
	<-pinged
}

// keepalive pings the client every pingInterval and closes the connection when a
// ping goes unanswered for pongTimeout.
func (c *streamClient) keepalive(ctx context.Context) {
	t := time.NewTicker(c.hub.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		pctx, cancel := context.WithTimeout(c.hub.writeCtx, c.hub.pongTimeout)
		err := c.conn.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				_ = c.conn.Close(websocket.StatusPolicyViolation, reasonKeepalive)
			}
			return
		}
	}
}

// serve writes the replay, then the live events. It returns the close status and
// reason, or a zero status when the connection is already gone.
func (c *streamClient) serve(ctx context.Context) (websocket.StatusCode, string) {
	if c.replay {
		if err := c.catchUp(ctx); err != nil {
			return c.ended(ctx, err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return c.ended(ctx, ctx.Err())
		case m, ok := <-c.sub.C():
			// A dropped subscription is closed at once, not drained: the
			// client is told now, and resumes from the log after c.last.
			if err := c.sub.Err(); err != nil || !ok {
				if err == nil {
					err = stream.ErrClosed
				}
				return c.ended(ctx, err)
			}
			if m.Seq <= c.floor {
				continue
			}
			if ctx.Err() != nil { // no new write once the client is to be closed
				return c.ended(ctx, ctx.Err())
			}
			if err := c.writeLive(ctx, m); err != nil {
				return c.ended(ctx, err)
			}
		}
	}
}

// streamBatchBytes bounds the events one write(2) carries to a live client.
const streamBatchBytes = 256 << 10

// writeLive writes m and every event already waiting behind it, up to
// streamBatchBytes, with one write(2): the events of a group commit arrive
// together, and a client that was not scheduled for a while has several.
func (c *streamClient) writeLive(ctx context.Context, m stream.Message) error {
	c.nc.cork()
	size := 0
	for {
		if m.Seq > c.floor {
			if err := c.writeMessage(ctx, m.Raw, true); err != nil {
				_ = c.nc.flush()
				return err
			}
			c.last = m.Seq
			size += len(m.Raw)
		}
		if size >= streamBatchBytes {
			break
		}
		var ok bool
		select {
		case m, ok = <-c.sub.C():
		default:
		}
		if !ok { // nothing waiting, or the subscription ended: serve sees it next
			break
		}
	}
	return c.nc.flush()
}

// catchUp replays the log from c.cursor up to the tip, in rounds (see
// streamReplayRounds), and leaves c.sub live with c.floor at the tip replayed.
func (c *streamClient) catchUp(ctx context.Context) error {
	for round := 1; ; round++ {
		until := c.log.Tip().Seq
		if err := c.replayTo(ctx, until); err != nil {
			return err
		}
		c.floor = max(c.floor, until)
		if c.hub.replayed != nil {
			c.hub.replayed(round)
		}
		err := c.sub.Err()
		if err == nil || !errors.Is(err, stream.ErrSlowConsumer) || round == streamReplayRounds {
			return err
		}
		sub, err := c.hub.stream.Subscribe(c.filter, c.hub.buffer)
		if err != nil {
			return err
		}
		c.sub.Close()
		c.sub = sub
	}
}

// replayTo writes the matching events after c.cursor up to seq until, a page at
// a time.
func (c *streamClient) replayTo(ctx context.Context, until uint64) error {
	for {
		c.page, c.ends = c.page[:0], c.ends[:0]
		_, err := c.log.QueryRaw(ctx, eventlog.Query{Since: c.cursor, Type: c.filter, Limit: c.hub.replayEvents, Until: until},
			func(seq uint64, raw []byte) (bool, error) {
				c.page = append(append(c.page, raw...), '\n')
				c.ends = append(c.ends, pageEnd{end: len(c.page), seq: seq})
				return len(c.page) < c.hub.replayBytes, nil
			})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &replayError{fmt.Errorf("replay: %w", err)}
		}
		if len(c.ends) == 0 {
			return nil
		}
		var msg []byte
		start := 0
		c.nc.cork() // the page goes out in one write
		for _, e := range c.ends {
			msg = c.page[start:e.end]
			if err := c.writeMessage(ctx, msg, false); err != nil {
				_ = c.nc.flush()
				return err
			}
			c.last, start = e.seq, e.end
		}
		if err := c.nc.flush(); err != nil {
			return err
		}
		// The next page starts after the last event of this one: since= is
		// strictly after a timestamp, and timestamps strictly increase along
		// the chain.
		if c.cursor, err = eventTime(msg); err != nil {
			return &replayError{fmt.Errorf("replay: event %d: %w", c.last, err)}
		}
	}
}

// pageEnd is where one message of a replay page ends, and its event's seq.
type pageEnd struct {
	end int
	seq uint64
}

// eventTime reads the timestamp of one stored event.
func eventTime(raw []byte) (time.Time, error) {
	var ev struct {
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return time.Time{}, fmt.Errorf("decode timestamp: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, ev.Timestamp)
	if err != nil {
		return time.Time{}, fmt.Errorf("decode timestamp: %w", err)
	}
	return t, nil
}

// writeMessage sends one text message, msg and "\n" if newline is set (an
// event's stored bytes are one message with "\n" after them). It lands in
// c.nc's batch, or is bounded by c.nc's write deadline: a write that runs out
// of time reports errWriteTimeout, and the caller closes the connection.
func (c *streamClient) writeMessage(ctx context.Context, msg []byte, newline bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.nc.text(msg, newline)
}

// replayError is a failure to read the log for a replay: the node's fault, not
// the connection's.
type replayError struct{ err error }

func (e *replayError) Error() string { return e.err.Error() }
func (e *replayError) Unwrap() error { return e.err }

// ended maps why serving stopped to the close status and reason; a zero status
// means the connection is gone and there is no one to tell.
func (c *streamClient) ended(ctx context.Context, err error) (websocket.StatusCode, string) {
	switch {
	case c.hub.ctx.Err() != nil, errors.Is(err, stream.ErrClosed):
		return websocket.StatusGoingAway, reasonShutdown
	case errors.Is(err, stream.ErrSlowConsumer):
		// The stream counts this drop (Status.SlowDrops).
		return websocket.StatusPolicyViolation, fmt.Sprintf(
			"slow consumer: fell more than %d events behind; resume with after_seq=%d", c.hub.buffer, c.last)
	case errors.Is(err, errWriteTimeout):
		if !errors.Is(c.sub.Err(), stream.ErrSlowConsumer) {
			c.hub.writeDrops.Add(1)
		}
		c.hub.logger.Info("stream client dropped: a write took longer than the write timeout",
			logkey.Timeout, c.hub.writeTimeout, logkey.LastSeq, c.last)
		return 0, ""
	}
	var re *replayError
	if errors.As(err, &re) {
		c.hub.logger.Error("stream replay failed", logkey.LastSeq, c.last, logkey.Err, err)
		return websocket.StatusInternalError, "internal error"
	}
	// The client went away, or the keepalive closed it: a write failed on a
	// closed connection, or the connection's context ended.
	return 0, ""
}
