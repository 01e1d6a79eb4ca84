package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/civnode/civnode/internal/logkey"
)

// statePoll is how often the state phase reads the chain's tip and the
// newest commitment while the clients create: the resolution of its lag.
const statePoll = 50 * time.Millisecond

// stateProofs is how many proofs the state phase times, half of missions
// the chain holds and half of ids it has never seen.
const stateProofs = 1000

// stateCommitments measures the node's commitments to its state
// (docs/state-proofs.md). While 64 clients create missions for --duration,
// it reads the chain's tip (GET /v1/state) and the newest commitment's
// through_seq (GET /v1/state/proof) every statePoll: a tip's lag is the time
// from the read that saw it to the first that saw a commitment through it.
// Then, with the node idle, one client times stateProofs proofs over HTTP.
func (b *harness) stateCommitments(ctx context.Context) error {
	b.log.Info("bench: state commitments under POST /v1/core/missions", logkey.Clients, writers, logkey.Duration, b.cfg.Duration)
	c := b.loadClient(writers, 30*time.Second)
	defer closeClient(c)
	poll := b.loadClient(2, 10*time.Second)
	defer closeClient(poll)
	op := b.createOp(c, newBuffers(writers))
	if _, err := runLoad(ctx, writers, time.Minute, writers, op, nil); err != nil {
		return fmt.Errorf("create missions: %w", err)
	}

	type seen struct {
		at  time.Time
		seq uint64
	}
	var (
		mu      sync.Mutex
		tips    []seen
		commits []seen
	)
	pollCtx, stopTips := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var pollErr error
	wg.Go(func() {
		t := time.NewTicker(statePoll)
		defer t.Stop()
		for {
			seq, err := b.chainSeq(pollCtx, poll)
			if err != nil {
				if pollCtx.Err() == nil {
					pollErr = err
				}
				return
			}
			mu.Lock()
			tips = append(tips, seen{time.Now(), seq})
			mu.Unlock()
			select {
			case <-pollCtx.Done():
				return
			case <-t.C:
			}
		}
	})
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchErr error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(statePoll)
		defer t.Stop()
		for {
			p, _, err := b.stateProof(watchCtx, poll, "mission/bench-absent")
			switch {
			case err == nil:
				mu.Lock()
				commits = append(commits, seen{time.Now(), p.ThroughSeq})
				mu.Unlock()
			case !errors.Is(err, errNotCommitted):
				if watchCtx.Err() == nil {
					watchErr = err
				}
				return
			}
			select {
			case <-watchCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	res, err := runLoad(ctx, writers, b.cfg.Duration, 0, op, nil)
	stopTips()
	wg.Wait()
	if err == nil {
		err = pollErr
	}
	if err == nil {
		// The last poll may precede the last creates; the proofs that follow
		// ask for missions up to the end of the load, so its tip is read too.
		var seq uint64
		if seq, err = b.chainSeq(ctx, poll); err == nil {
			tips = append(tips, seen{time.Now(), seq})
		}
	}
	if err != nil {
		return fmt.Errorf("create missions: %w", err)
	}
	// Wait for a commitment through the last tip read, within 30 s.
	mu.Lock()
	last := tips[len(tips)-1].seq
	mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		mu.Lock()
		done := len(commits) > 0 && commits[len(commits)-1].seq >= last
		mu.Unlock()
		if done || watchErr != nil {
			break
		}
		time.Sleep(statePoll)
	}
	stopWatch()
	<-watched
	if watchErr != nil {
		return fmt.Errorf("state proofs: %w", watchErr)
	}
	var lags []time.Duration
	for _, tip := range tips {
		i := slices.IndexFunc(commits, func(c seen) bool { return c.seq >= tip.seq && !c.at.Before(tip.at) })
		if i < 0 {
			return fmt.Errorf("no commitment covered seq %d within 30 s of the load's end", tip.seq)
		}
		lags = append(lags, commits[i].at.Sub(tip.at))
	}
	b.res.set("state_create_c64_per_s", res.opsPerSecond())
	lag := latencyResult(lags)
	b.res.set("state_lag_p50_ms", lag.quantile(0.5))
	b.res.set("state_lag_p99_ms", lag.quantile(0.99))
	b.log.Info("bench: state commitments", logkey.PerS, int(res.opsPerSecond()),
		logkey.P50MS, round3(lag.quantile(0.5)), logkey.P99MS, round3(lag.quantile(0.99)))
	return b.stateProofLatency(ctx)
}

// stateProofLatency times stateProofs proofs from one client, alternately of
// a mission the chain holds and of an id it never saw, each checked to be of
// the kind asked.
func (b *harness) stateProofLatency(ctx context.Context) error {
	c := b.loadClient(1, 10*time.Second)
	defer closeClient(c)
	ids, err := b.missionIDs(ctx, c, 500)
	if err != nil {
		return err
	}
	b.log.Info("bench: GET /v1/state/proof", logkey.Missions, len(ids), logkey.Count, stateProofs)
	var lat []time.Duration
	var entries uint64
	for i := range stateProofs {
		key := fmt.Sprintf("mission/bench-absent-%d", i)
		if i%2 == 0 {
			key = "mission/" + ids[mrand.IntN(len(ids))]
		}
		t0 := time.Now()
		p, found, err := b.stateProof(ctx, c, key)
		if err != nil {
			return fmt.Errorf("GET /v1/state/proof?key=%s: %w", key, err)
		}
		lat = append(lat, time.Since(t0))
		if found != (i%2 == 0) {
			return fmt.Errorf("GET /v1/state/proof?key=%s: found %v", key, found)
		}
		entries = p.Entries
	}
	b.res.set("state_entries", float64(entries))
	proofs := latencyResult(lat)
	b.res.set("state_proof_p50_ms", proofs.quantile(0.5))
	b.res.set("state_proof_p99_ms", proofs.quantile(0.99))
	b.log.Info("bench: GET /v1/state/proof", logkey.Count, entries,
		logkey.P50MS, round3(proofs.quantile(0.5)), logkey.P99MS, round3(proofs.quantile(0.99)))
	return nil
}

// stateAnswer is the part of GET /v1/state/proof the phase reads.
type stateAnswer struct {
	Value      json.RawMessage `json:"value"`
	ThroughSeq uint64          `json:"through_seq"`
	Entries    uint64          `json:"entries"`
}

// stateProof fetches the proof of key; found says whether the map holds it.
func (b *harness) stateProof(ctx context.Context, c *http.Client, key string) (stateAnswer, bool, error) {
	var p stateAnswer
	err := b.target.call(ctx, c, http.MethodGet, "/v1/state/proof?key="+url.QueryEscape(key), nil, &p)
	if se := (*statusError)(nil); errors.As(err, &se) && se.got == http.StatusServiceUnavailable {
		return p, false, errNotCommitted
	}
	if err != nil {
		return p, false, err
	}
	return p, len(p.Value) > 0 && string(p.Value) != "null", nil
}

// chainSeq is the chain's seq as GET /v1/state answers it.
func (b *harness) chainSeq(ctx context.Context, c *http.Client) (uint64, error) {
	var st struct {
		Chain struct {
			Seq uint64 `json:"seq"`
		} `json:"chain"`
	}
	err := b.target.call(ctx, c, http.MethodGet, "/v1/state", nil, &st)
	return st.Chain.Seq, err
}

// missionIDs reads up to n ids of missions the chain holds, from pages of
// GET /v1/events at random points of it.
func (b *harness) missionIDs(ctx context.Context, c *http.Client, n int) ([]string, error) {
	since, err := b.sampleSince(ctx, c)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, ts := range since {
		var page struct {
			Events []struct {
				Type    string `json:"type"`
				Payload struct {
					MissionID string `json:"mission_id"`
				} `json:"payload"`
			} `json:"events"`
		}
		if err := b.target.call(ctx, c, http.MethodGet, "/v1/events?limit=100&since="+url.QueryEscape(ts), nil, &page); err != nil {
			return nil, err
		}
		for _, ev := range page.Events {
			if ev.Type == "mission.created" && ev.Payload.MissionID != "" {
				ids = append(ids, ev.Payload.MissionID)
			}
		}
		if len(ids) >= n {
			break
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("GET /v1/events: no mission.created in the pages read")
	}
	return ids, nil
}
