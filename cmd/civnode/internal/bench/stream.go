package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/coder/websocket"
)

// The stream phase (the target: commit → 100 WebSocket clients, p99 < 10 ms at
// 1k events/s).
const (
	streamClients = 100
	streamRate    = 1000 // events a second
	// streamWriters take the pacer's permits; as many as the other
	// phases' clients, so that creates at tens of ms each still keep 1k/s.
	streamWriters = writers
	// streamTick is how often the pacer releases the permits due: a
	// 1 ms ticker is not kept on a loaded machine, and a 2 ms batch (two
	// creates) is close to a steady 1k/s.
	streamTick = 2 * time.Millisecond
)

// streamOnly is bench --stream-only: the idle limits the stream's figures are
// read against (sign, one synced write), a node filled with --events missions,
// and the stream phase; nothing else, so that stream runs alternate quickly.
func (b *harness) streamOnly(ctx context.Context) error {
	if err := b.signAndSyncLimits(); err != nil {
		return err
	}
	if err := b.startTarget(ctx); err != nil {
		return err
	}
	if err := b.fill(ctx); err != nil {
		return err
	}
	if err := b.streamDelivery(ctx); err != nil {
		return err
	}
	if b.node != nil {
		b.log.Info("bench: stopping the node (SIGTERM)")
		err := b.node.stop()
		b.node = nil
		if err != nil {
			return fmt.Errorf("stop the node after the run: %w", err)
		}
	}
	return nil
}

// streamDelivery measures how long events take to reach streamClients
// WebSocket clients of GET /v1/stream while missions are created at
// streamRate. The latency of one delivery is the time the client read
// the event minus the event's own timestamp, which the sequencer set before
// signing and the fsync: so it is an upper bound on commit → delivery, and
// the bench and the node share one clock on loopback.
func (b *harness) streamDelivery(ctx context.Context) error {
	b.log.Info("bench: stream delivery", logkey.Clients, streamClients, logkey.EventsPerS, streamRate, logkey.Duration, b.cfg.Duration)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(b.target.base, "http") + "/v1/stream"
	clients := make([]*streamClient, streamClients)
	for i := range clients {
		c, err := dialStreamClient(ctx, wsURL, b.target.token, b.cfg.TLS)
		if err != nil {
			for _, c := range clients[:i] {
				c.close()
			}
			return fmt.Errorf("stream client %d: %w", i, err)
		}
		clients[i] = c
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()

	// The writers create missions at the paced rate: a pacer hands out
	// permits on a schedule that does not depend on the answers (an open
	// loop), and enough writers take them that one slow create does not hold
	// the next back. With a few writers each waiting on its create, the
	// phase measured the creates' latency instead: 8 writers at ≈ 10–20 ms a
	// create under this load reached 275–786 events/s.
	hc := b.loadClient(streamWriters, 30*time.Second)
	defer closeClient(hc)
	permits := make(chan struct{}, streamWriters)
	writeCtx, stopWriters := context.WithTimeout(ctx, b.cfg.Duration)
	defer stopWriters()
	var missed int64 // permits due while every writer was busy
	cpu0, cpuErr := b.nodeCPU()
	start := time.Now()
	go func() {
		defer close(permits)
		t := time.NewTicker(streamTick)
		defer t.Stop()
		var issued int64
		for {
			select {
			case <-writeCtx.Done():
				return
			case <-t.C:
			}
			// What is due by now, not a fixed count a tick: a tick the
			// loaded machine delivers late is made up by the next.
			due := int64(time.Since(start).Seconds() * streamRate)
			for ; issued < due; issued++ {
				select {
				case permits <- struct{}{}:
				default:
					missed++
				}
			}
		}
	}()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		written int64
		created []time.Duration
		werr    error
	)
	for range streamWriters {
		wg.Go(func() {
			var buf bytes.Buffer
			for range permits {
				t0 := time.Now()
				err := b.target.do(ctx, hc, http.MethodPost, "/v1/core/missions", b.body, http.StatusOK, &buf)
				d := time.Since(t0)
				mu.Lock()
				if err != nil && werr == nil {
					werr = err
					stopWriters()
				}
				written++
				created = append(created, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := b.nodeCPU()
	if cpuErr == nil {
		cpuErr = err
	}
	if werr != nil {
		return fmt.Errorf("stream phase: create missions: %w", werr)
	}
	creates := latencyResult(created)
	var st struct {
		Chain struct {
			Seq uint64 `json:"seq"`
		} `json:"chain"`
	}
	if err := b.target.call(ctx, hc, http.MethodGet, "/v1/state", nil, &st); err != nil {
		return fmt.Errorf("stream phase: read the tip: %w", err)
	}
	lastSeq := st.Chain.Seq
	// Every client must see every event up to the last one written.
	drain, stopDrain := context.WithTimeout(ctx, 30*time.Second)
	defer stopDrain()
	var lat []time.Duration
	dropped := 0
	for _, c := range clients {
		if err := c.waitFor(drain, lastSeq); err != nil {
			dropped++
			b.log.Warn("bench: stream client fell behind", logkey.Err, err)
		}
		lat = append(lat, c.latencies()...)
	}
	res := latencyResult(lat)
	b.res.set("stream_events_per_s", rate(written, elapsed))
	b.res.set("stream_delivery_p50_ms", res.quantile(0.50))
	b.res.set("stream_delivery_p99_ms", res.quantile(0.99))
	b.res.set("stream_clients_dropped", float64(dropped))
	b.res.set("stream_create_p99_ms", creates.quantile(0.99))
	if b.node != nil && cpuErr == nil && written > 0 {
		// What the node spends on an event and its 100 deliveries: unlike
		// the latencies, it does not depend on how many cores the rest of
		// the machine leaves the node.
		b.res.set("stream_node_cores", (cpu1-cpu0).Seconds()/elapsed.Seconds())
		b.res.set("stream_node_cpu_us_per_event", float64((cpu1-cpu0).Microseconds())/float64(written))
	}
	b.res.set("stream_creates_missed", float64(missed))
	b.log.Info("bench: stream delivery", logkey.EventsPerS, int(rate(written, elapsed)), logkey.Deliveries, len(lat),
		logkey.CreateP50MS, round3(creates.quantile(0.5)), logkey.CreateP99MS, round3(creates.quantile(0.99)), logkey.Missed, missed,
		logkey.P50MS, round3(res.quantile(0.5)), logkey.P99MS, round3(res.quantile(0.99)), logkey.Dropped, dropped)
	if dropped > 0 {
		return fmt.Errorf("stream phase: %d of %d clients did not receive every event", dropped, len(clients))
	}
	return nil
}

// nodeCPU is the CPU time the node's process has used (Linux /proc); 0 and
// no error with --node.
func (b *harness) nodeCPU() (time.Duration, error) {
	if b.node == nil {
		return 0, nil
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.node.pid()))
	if err != nil {
		return 0, fmt.Errorf("node cpu: %w", err)
	}
	// Fields after the command's closing parenthesis: state is the first,
	// utime and stime the 12th and 13th, in clock ticks (USER_HZ, 100).
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("node cpu: unexpected /proc stat %.80q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("node cpu: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// streamClient is one WebSocket follower; it records the delivery latency of
// every event it reads.
type streamClient struct {
	conn *websocket.Conn
	done chan struct{}

	mu   sync.Mutex
	cond *sync.Cond
	seq  uint64 // highest seq read
	lat  []time.Duration
	err  error // why reading ended
}

func dialStreamClient(ctx context.Context, url, token string, tlsConfig *tls.Config) (*streamClient, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: h,
		HTTPClient: &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: tlsConfig}}})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(16 << 20)
	c := &streamClient{conn: conn, done: make(chan struct{}), lat: make([]time.Duration, 0, 8192)}
	c.cond = sync.NewCond(&c.mu)
	go c.read()
	return c, nil
}

// read reads until the connection ends (close ends it). Its reads take no
// cancelable context: coder/websocket arms a timer for each read under one,
// which at 100 clients × 1,000 events a second is work the node's cores pay.
// Each message is read into one reused buffer: Conn.Read allocates every
// message, and the garbage of 100,000 of them a second is CPU the node pays.
func (c *streamClient) read() {
	defer close(c.done)
	var buf bytes.Buffer
	for {
		buf.Reset()
		_, r, err := c.conn.Reader(context.Background())
		if err == nil {
			_, err = buf.ReadFrom(r)
		}
		now := time.Now()
		var seq uint64
		var ts time.Time
		if err == nil {
			seq, ts, err = eventSeqTime(buf.Bytes())
		}
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		c.seq = max(c.seq, seq)
		c.lat = append(c.lat, now.Sub(ts))
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// waitFor waits until the client has read seq, or its reading ended, or ctx.
func (c *streamClient) waitFor(ctx context.Context, seq uint64) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.seq < seq && c.err == nil && ctx.Err() == nil {
		c.cond.Wait()
	}
	switch {
	case c.seq >= seq:
		return nil
	case c.err != nil:
		return fmt.Errorf("read ended at seq %d of %d: %w", c.seq, seq, c.err)
	default:
		return fmt.Errorf("read only up to seq %d of %d: %w", c.seq, seq, ctx.Err())
	}
}

func (c *streamClient) latencies() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lat)
}

func (c *streamClient) close() {
	if c == nil {
		return
	}
	err := c.conn.Close(websocket.StatusNormalClosure, "bench done")
	if err != nil && !errors.Is(err, context.Canceled) {
		c.conn.CloseNow()
	}
	<-c.done
}

// eventSeqTime reads seq and timestamp from an event as the node stores it,
// without decoding the whole event: a hundred clients decoding every payload
// would spend the cores the node is being measured on. The stored form has its
// members in RFC 8785 order (node_did, payload, prev_hash, seq, timestamp, …),
// so the last "seq" and "timestamp" members are the event's own, whatever the
// payload holds.
func eventSeqTime(msg []byte) (uint64, time.Time, error) {
	i := bytes.LastIndex(msg, []byte(`"seq":`))
	j := bytes.LastIndex(msg, []byte(`"timestamp":"`))
	if i < 0 || j < 0 {
		return 0, time.Time{}, fmt.Errorf("not an event: %.80s", msg)
	}
	digits := msg[i+len(`"seq":`):]
	if k := bytes.IndexByte(digits, ','); k >= 0 {
		digits = digits[:k]
	}
	seq, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("event seq: %w", err)
	}
	rest := msg[j+len(`"timestamp":"`):]
	k := bytes.IndexByte(rest, '"')
	if k < 0 {
		return 0, time.Time{}, fmt.Errorf("not an event: %.80s", msg)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(rest[:k]))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("event timestamp: %w", err)
	}
	return seq, ts, nil
}
