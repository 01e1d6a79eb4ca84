package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	civhttp "github.com/civnode/civnode/http"
)

// The hostile phase: the largest events the API accepts, read in the largest
// pages it serves, by clients that read fast and clients that never read, while a
// probe checks that the node still answers.
const (
	hostileMissions = 300
	// hostileResultChars control characters escape to 6 bytes each in JSON
	// ("\u0001"): a result of 174,000 bytes, under the 256 KiB result limit,
	// makes a request body and an event of about 1 MiB, under the body limit.
	hostileResultChars = 174000
	hostileWriters     = 4
	// hostileReaders is design.md's "128 concurrent full-page readers".
	hostileReaders = 128
	hostileStalled = 3
	hostilePoll    = 100 * time.Millisecond
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
)

func (b *bench) hostilePhase(ctx context.Context) error {
	if err := b.hostileFill(ctx); err != nil {
		return fmt.Errorf("hostile: %w", err)
	}
	return b.hostileRead(ctx)
}

// hostileFill publishes, claims and completes hostileMissions missions with
// ~1 MiB results, as an identity bench bootstraps and binds for the purpose.
func (b *bench) hostileFill(ctx context.Context) error {
	var rnd [4]byte
	rand.Read(rnd[:])
	slug := "bench-" + hex.EncodeToString(rnd[:])
	b.log.Info("bench: hostile: completing missions with ~1 MiB results", "missions", hostileMissions, "claimer", slug)
	c := newLoadClient(hostileWriters, 2*time.Minute)
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
	progress, done := b.m.progress("hostile", hostileMissions)
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

// hostileRead runs the readers, the stalled clients and the health probe for
// --hostile-duration and reports the node's peak RSS rise and the slowest probe.
func (b *bench) hostileRead(ctx context.Context) error {
	d := b.cfg.hostileDuration
	b.log.Info("bench: hostile: reading", "readers", hostileReaders, "stalled", hostileStalled, "duration", d)
	var hwmBefore float64
	if b.node != nil {
		b.node.resetPeak() // when it cannot, the rise is a lower bound
		_, hwm, err := b.node.memory()
		if err != nil {
			return err
		}
		hwmBefore = hwm
	}
	start := time.Now()
	phase, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	const path = "/v1/events?type=mission.completed&limit=1000"
	var reads, readErrs, readBytes atomic.Int64
	var wg sync.WaitGroup

	readers := newLoadClient(hostileReaders, 0) // bounded by the phase, not a timeout
	defer closeClient(readers)
	for range hostileReaders {
		wg.Go(func() {
			for phase.Err() == nil {
				n, err := b.hostileGet(phase, readers, path, true)
				readBytes.Add(n)
				switch {
				case err == nil:
					reads.Add(1)
				case phase.Err() == nil:
					readErrs.Add(1)
					b.log.Debug("bench: hostile read", "err", err)
					time.Sleep(hostilePoll) // a refusal is an answer too; do not spin on it
				}
			}
		})
	}
	for range hostileStalled {
		wg.Go(func() {
			// Its own connection, so that no reader's request waits behind it.
			c := newLoadClient(1, 0)
			defer closeClient(c)
			b.hostileGet(phase, c, path, false)
		})
	}

	var healthMax time.Duration
	var healthLat []time.Duration
	var healthFails, polls int
	var capped bool
	probe := newLoadClient(1, healthTimeout)
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
				b.log.Warn("bench: hostile: node RSS passed the cap; ending the phase early", "rss_mb", int(rss), "cap_mb", hostileRSSCap)
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

	b.res.set("hostile_reads_per_s", rate(reads.Load(), elapsed))
	b.res.set("hostile_read_mb_per_s", float64(readBytes.Load())/1e6/elapsed.Seconds())
	b.res.set("hostile_read_errors", float64(readErrs.Load()))
	b.res.set("hostile_health_max_ms", ms(healthMax))
	slices.Sort(healthLat)
	b.res.set("hostile_health_p99_ms", loadResult{lat: healthLat}.quantile(0.99))
	b.res.set("hostile_health_failures", float64(healthFails))
	if b.node != nil {
		var c float64
		if capped {
			c = 1
		}
		b.res.set("hostile_rss_capped", c)
		_, hwm, err := b.node.memory()
		if err != nil {
			return err
		}
		b.res.set("hostile_hwm_after_mb", hwm)
		b.res.set("hostile_rss_rise_mb", hwm-hwmBefore)
		// The node bench starts runs with the default budgets.
		b.res.set("hostile_rss_allowance_mb", float64(hostileBlockCache+civhttp.DefaultResponseBudgetPages*civhttp.DefaultPageBytes)/1e6)
	}
	b.log.Info("bench: hostile: done", "full_reads", reads.Load(), "read_errors", readErrs.Load(),
		"health_polls", polls, "health_max_ms", round3(ms(healthMax)), "health_p99_ms", round3(b.res.get("hostile_health_p99_ms")),
		"health_failures", healthFails,
		"rss_rise_mb", round3(b.res.get("hostile_rss_rise_mb")))
	return nil
}

// hostileGet sends one GET with the owner token. A reader reads the answer to its
// end; a stalled client reads nothing and holds the answer open until ctx ends.
// It returns the bytes read and nil only for a 200 read to its end.
func (b *bench) hostileGet(ctx context.Context, c *http.Client, path string, read bool) (int64, error) {
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
	if !read {
		<-ctx.Done()
		return 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		var buf bytes.Buffer
		buf.ReadFrom(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, snippet(buf.Bytes()))
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return n, err
}
