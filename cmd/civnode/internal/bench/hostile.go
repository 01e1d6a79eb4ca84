package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	civhttp "github.com/civnode/civnode/http"
	"github.com/civnode/civnode/internal/logkey"
)

// The hostile phase, the load the response budget bounds (docs/benchmarks.md,
// "Memory under 128 readers"): 150 of the largest events the API accepts, read
// in the largest pages it serves by 8, then 32, then 128 clients that read fast
// and 3 that never read, while a probe checks that the node still answers.
const (
	// hostileMissions is the scenario's size: 150 events of ~1 MiB.
	hostileMissions = 150
	// hostileResultChars control characters escape to 6 bytes each in JSON
	// ("\u0001"): a result of 174,000 bytes, under the 256 KiB result limit,
	// makes a request body and an event of about 1 MiB, under the body limit.
	hostileResultChars = 174000
	hostileWriters     = 4
	// hostileStalled clients send a full-page GET on a raw connection and never
	// read a byte of the answer, which holds a page until the write deadline.
	hostileStalled = 3
	hostilePoll    = 100 * time.Millisecond
	// hostileRSSPoll spaces the samples of the node's VmRSS during a level.
	hostileRSSPoll = 50 * time.Millisecond
	// hostileHealthPoll spaces the health probes, enough of them in a phase
	// for a p99.
	hostileHealthPoll = 20 * time.Millisecond
	healthTimeout     = 10 * time.Second
	// hostileBlockCache is the node's Pebble block cache (eventlog's default):
	// with the response budget, what the readers may add to the RSS.
	hostileBlockCache = 64 << 20
	// hostileRSSCap ends the reading early when the node's RSS passes it, so that
	// a node that buffers whole answers does not take the machine down with it.
	hostileRSSCap = 4000 // MB
	// hostilePath is a full page of the ~1 MiB events: about 4 of them, cut by
	// the 4 MiB page budget.
	hostilePath = "/v1/events?type=mission.completed&limit=1000"
)

// hostileLevels are the reader counts of the phase's levels; the last is
// 128 concurrent full-page readers, the scale docs/limits.md states its bound at.
var hostileLevels = []int{8, 32, 128}

// hostileKey names the figure of a level: hostile_c128_rss_rise_mb.
func hostileKey(readers int, figure string) string {
	return fmt.Sprintf("hostile_c%d_%s", readers, figure)
}

func (b *harness) hostilePhase(ctx context.Context) error {
	if err := b.hostileFill(ctx); err != nil {
		return fmt.Errorf("hostile: %w", err)
	}
	return b.hostileRead(ctx)
}

// hostileFill publishes, claims and completes hostileMissions missions with
// ~1 MiB results, as an identity bench bootstraps and binds for the purpose.
func (b *harness) hostileFill(ctx context.Context) error {
	var rnd [4]byte
	rand.Read(rnd[:])
	slug := "bench-" + hex.EncodeToString(rnd[:])
	b.log.Info("bench: hostile: completing missions with ~1 MiB results", logkey.Missions, hostileMissions, logkey.Claimer, slug)
	c := b.loadClient(hostileWriters, 2*time.Minute)
	defer closeClient(c)
	var boot struct {
		AgentDID string `json:"agent_did"`
	}
	if err := b.target.call(ctx, c, http.MethodPost, "/v1/civilization/bootstrap-identity", map[string]string{
		"display_name": "Bench Agent", "public_id": slug, "faction": "order", "role": "enforcer",
	}, &boot); err != nil {
		return err
	}
	if err := b.target.call(ctx, c, http.MethodPost, "/v1/civilization/controller-binding", map[string]string{
		"agent_did": boot.AgentDID, "controller_kind": "local_model", "controller_ref": "bench@" + slug,
	}, nil); err != nil {
		return err
	}
	claim, err := json.Marshal(map[string]string{"claimer": slug})
	if err != nil {
		return err
	}
	complete, err := json.Marshal(map[string]string{"result": strings.Repeat("\x01", hostileResultChars)})
	if err != nil {
		return err
	}
	bufs := newBuffers(hostileWriters)
	op := func(ctx context.Context, w int) (int, error) {
		buf := bufs.of(w)
		if err := b.target.do(ctx, c, http.MethodPost, "/v1/core/missions", b.body, http.StatusOK, buf); err != nil {
			return 0, err
		}
		var m struct {
			MissionID string `json:"mission_id"`
		}
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m.MissionID == "" {
			return 0, fmt.Errorf("POST /v1/core/missions: no mission_id in %s", snippet(buf.Bytes()))
		}
		path := "/v1/core/missions/" + m.MissionID
		if err := b.target.do(ctx, c, http.MethodPost, path+"/claim", claim, http.StatusOK, buf); err != nil {
			return 0, err
		}
		return 1, b.target.do(ctx, c, http.MethodPost, path+"/complete", complete, http.StatusOK, buf)
	}
	progress, done := b.cfg.Progress("hostile", hostileMissions)
	var onDone func(int64)
	if progress != nil {
		onDone = func(n int64) { progress(uint64(n)) }
	}
	res, err := runLoad(ctx, hostileWriters, 20*time.Minute, hostileMissions, op, onDone)
	done()
	if err != nil {
		return err
	}
	b.res.set("hostile_completed_mb", float64(res.ops)*float64(len(complete))/1e6)
	return nil
}

// hostileRead runs, for each of hostileLevels in turn, that many readers of
// full pages, hostileStalled clients that never read, and the health probe for
// --hostile-duration, and reports each level's figures. The RSS rise of every
// level is over the filled node, measured once before the first level: memory a
// level leaves behind counts against the next, which can only overstate a rise.
func (b *harness) hostileRead(ctx context.Context) error {
	// The node bench starts runs with the default budgets.
	b.res.set("hostile_rss_allowance_mb", float64(hostileBlockCache+civhttp.DefaultResponseBudgetPages*civhttp.DefaultPageBytes)/1e6)
	var before float64
	if b.node != nil {
		rss, _, err := b.node.memory()
		if err != nil {
			return err
		}
		before = rss
		b.res.set("hostile_rss_before_mb", rss)
	}
	var capped bool
	for _, n := range hostileLevels {
		var err error
		if capped, err = b.hostileLevel(ctx, n, before); err != nil {
			return err
		}
		if capped {
			break // the node already holds more than the machine should give it
		}
	}
	if b.node != nil {
		var c float64
		if capped {
			c = 1
		}
		b.res.set("hostile_rss_capped", c)
	}
	return nil
}

// hostileLevel is one level of hostileRead: readers readers. It reports whether
// the node's RSS passed hostileRSSCap, which ends the level early.
func (b *harness) hostileLevel(ctx context.Context, readers int, before float64) (capped bool, err error) {
	d := b.cfg.HostileDuration
	b.log.Info("bench: hostile: reading", logkey.Readers, readers, logkey.Stalled, hostileStalled, logkey.Duration, d)
	var stopRSS func() float64
	if b.node != nil {
		b.node.resetPeak() // when it cannot, VmHWM may hold an earlier peak; the samples still bound this one
		stopRSS = b.node.watchRSS(hostileRSSPoll)
	}
	start := time.Now()
	phase, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var reads, busy, readErrs, readBytes atomic.Int64
	var wg sync.WaitGroup

	// The stalled clients first, so that they hold their pages while the readers
	// come.
	var stalled []net.Conn
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	for range hostileStalled {
		c, err := b.hostileStall(ctx)
		if err != nil {
			if stopRSS != nil {
				stopRSS()
			}
			return false, fmt.Errorf("hostile: a client that never reads: %w", err)
		}
		stalled = append(stalled, c)
	}

	rc := b.loadClient(readers, 0) // bounded by the phase, not a timeout
	defer closeClient(rc)
	for range readers {
		wg.Go(func() {
			for phase.Err() == nil {
				n, err := b.hostileGet(phase, rc, hostilePath)
				readBytes.Add(n)
				switch {
				case err == nil:
					reads.Add(1)
				case phase.Err() != nil:
				case errors.Is(err, errHostileBusy):
					busy.Add(1)
					time.Sleep(hostilePoll) // a refusal is an answer too; do not spin on it
				default:
					readErrs.Add(1)
					b.log.Debug("bench: hostile read", logkey.Err, err)
					time.Sleep(hostilePoll)
				}
			}
		})
	}

	var healthMax time.Duration
	var healthLat []time.Duration
	var healthFails, polls int
	probe := b.loadClient(1, healthTimeout)
	defer closeClient(probe)
	tick := time.NewTicker(hostileHealthPoll)
	for phase.Err() == nil {
		t0 := time.Now()
		if !healthy(ctx, probe, b.target.base) {
			healthFails++
		}
		took := time.Since(t0)
		healthMax = max(healthMax, took)
		healthLat = append(healthLat, took)
		polls++
		if b.node != nil {
			if rss, _, err := b.node.memory(); err == nil && rss > hostileRSSCap {
				capped = true
				b.log.Warn("bench: hostile: node RSS passed the cap; ending the phase early", logkey.RSSMB, int(rss), logkey.CapMB, hostileRSSCap)
				cancel()
			}
		}
		select {
		case <-phase.Done():
		case <-tick.C:
		}
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(start) // shorter than d when the RSS cap ended the phase

	key := func(f string) string { return hostileKey(readers, f) }
	b.res.set(key("pages_per_s"), rate(reads.Load(), elapsed))
	b.res.set(key("read_mb_per_s"), float64(readBytes.Load())/1e6/elapsed.Seconds())
	b.res.set(key("busy"), float64(busy.Load()))
	b.res.set(key("read_errors"), float64(readErrs.Load()))
	b.res.set(key("health_max_ms"), ms(healthMax))
	b.res.set(key("health_p99_ms"), latencyResult(healthLat).quantile(0.99))
	b.res.set(key("health_failures"), float64(healthFails))
	if b.node != nil {
		peak := stopRSS()
		_, hwm, err := b.node.memory()
		if err != nil {
			return capped, err
		}
		// Linux updates VmHWM lazily, so a sampled VmRSS can exceed it, and a
		// peak between two samples shows only in VmHWM.
		peak = max(peak, hwm)
		b.res.set(key("rss_peak_mb"), peak)
		b.res.set(key("rss_rise_mb"), peak-before)
	}
	b.log.Info("bench: hostile: done", logkey.Readers, readers, logkey.FullReads, reads.Load(), logkey.Busy, busy.Load(),
		logkey.ReadErrors, readErrs.Load(), logkey.HealthPolls, polls, logkey.HealthMaxMS, round3(ms(healthMax)),
		logkey.HealthP99MS, round3(b.res.get(key("health_p99_ms"))), logkey.HealthFailures, healthFails,
		logkey.RSSRiseMB, round3(b.res.get(key("rss_rise_mb"))))
	return capped, nil
}

// hostileStall opens a raw connection, sends a full-page GET with the owner
// token, and returns the connection unread: the node holds the page until its
// write deadline or until the connection is closed.
func (b *harness) hostileStall(ctx context.Context) (net.Conn, error) {
	u, err := url.Parse(b.target.base)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	req := "GET " + hostilePath + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + b.target.token + "\r\n\r\n"
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// hostileGet sends one GET with the owner token and reads the answer to its end.
// It returns the bytes read and nil only for a 200 read to its end.
func (b *harness) hostileGet(ctx context.Context, c *http.Client, path string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.target.base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+b.target.token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var buf bytes.Buffer
		buf.ReadFrom(io.LimitReader(resp.Body, 4096))
		var e struct {
			Code string `json:"code"`
		}
		if resp.StatusCode == http.StatusServiceUnavailable && json.Unmarshal(buf.Bytes(), &e) == nil && e.Code == "busy" {
			return 0, errHostileBusy
		}
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, snippet(buf.Bytes()))
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return n, err
}
