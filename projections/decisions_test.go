package projections_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

var errTaken = errors.New("mission is not open")

// claim is a command's decision: claim missionID for did(claimer) if the
// newest state says it is open.
func claim(m *projections.Missions, missionID string, claimer int) func() ([]eventlog.Draft, error) {
	return func() ([]eventlog.Draft, error) {
		ref, ok, err := m.Decisions().MissionRef(missionID)
		if err != nil {
			return nil, err
		}
		if !ok || ref.State != events.StateCreated {
			return nil, errTaken
		}
		return []eventlog.Draft{{Type: events.TypeMissionAccepted, Payload: events.MissionAccepted{MissionID: missionID,
			IssuerDID: ref.IssuerDID, Claimer: "c", ClaimerDID: did(claimer), Reward: ref.Reward}}}, nil
	}
}

// TestDecisionsSeeEveryEarlierDecision: inside Log.Decide, Decisions() reads
// the effect of every decision returned before, durable or not, while the
// queries made with NewMissions read durable state only; once the decisions
// are durable both answer the same.
func TestDecisionsSeeEveryEarlierDecision(t *testing.T) {
	// The commit hook holds the committer when armed: the group it is called
	// for is durable, and every group after it is sequenced (folded into the
	// newest state) but cannot be made durable until the hook returns.
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	c := newChain(t, func(o *eventlog.Options) {
		o.OnCommit = func([]eventlog.Event) error {
			if armed.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
			return nil
		}
	})
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unhold) // before the log closes, should the test stop early
	ctx := context.Background()
	durable, decisions := c.missions, c.missions.Decisions()
	same := func(id string) {
		t.Helper()
		a, aok := must2(durable.Mission(id))(t)
		b, bok := must2(decisions.Mission(id))(t)
		if ja, jb := jsonOf(t, []any{a, aok}), jsonOf(t, []any{b, bok}); ja != jb {
			t.Errorf("%s: durable %s\n decisions %s", id, ja, jb)
		}
	}

	// One decision after another, each released when durable: the next one
	// sees it, and a claim of a claimed mission is refused.
	a := missionID(1)
	if _, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		if _, ok, err := decisions.MissionRef(a); err != nil || ok {
			t.Errorf("before its creation: found %v, err %v", ok, err)
		}
		return []eventlog.Draft{{Type: events.TypeMissionCreated, Payload: created(1, "genesis")}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	same(a)
	if _, err := c.log.Decide(ctx, claim(c.missions, a, 1)); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	tip := c.log.Tip()
	if _, err := c.log.Decide(ctx, claim(c.missions, a, 2)); !errors.Is(err, errTaken) {
		t.Fatalf("second claim: %v", err)
	}
	if c.log.Tip() != tip {
		t.Error("a refused decision appended")
	}
	if ref, _ := must2(durable.MissionRef(a))(t); ref.State != events.StateClaimed || ref.ClaimerDID != did(1) {
		t.Errorf("after the claims: %+v", ref)
	}
	same(a)

	// Now hold the committer on an append, and decide behind it: the creation
	// of b and its claim are sequenced but not durable.
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	run := func(f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f() }()
	}
	armed.Store(true)
	run(func() error {
		_, err := c.log.Append(ctx, eventlog.Draft{Type: events.TypeMissionCreated, Payload: created(2, "genesis")})
		return err
	})
	wait(held, "the commit hook")
	b := missionID(3)
	createdB := make(chan struct{})
	run(func() error {
		_, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
			defer close(createdB)
			return []eventlog.Draft{{Type: events.TypeMissionCreated, Payload: created(3, "genesis")}}, nil
		})
		return err
	})
	// The sequencer folds b's creation before it runs the next decision.
	wait(createdB, "the creation of b")
	claimedB := make(chan struct{})
	run(func() error {
		_, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
			defer close(claimedB)
			return claim(c.missions, b, 4)() // sees b created, though it is not durable
		})
		return err
	})
	wait(claimedB, "the claim of b")
	type seen struct {
		ref       events.MissionRef
		ok        bool
		count     int
		claimedBy []projections.MissionRecord
		err       error
	}
	probed := make(chan seen, 1)
	run(func() error {
		_, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
			var s seen
			s.ref, s.ok, s.err = decisions.MissionRef(b)
			if s.err == nil {
				s.count, s.err = decisions.Count()
			}
			probed <- s
			return nil, nil
		})
		return err
	})
	var s seen
	select {
	case s = <-probed:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the probe")
	}
	if s.err != nil || !s.ok || s.ref.State != events.StateClaimed || s.ref.ClaimerDID != did(4) || s.count != 3 {
		t.Errorf("inside Decide, the newest state of b: %+v, found %v, %d missions, err %v", s.ref, s.ok, s.count, s.err)
	}
	// Still held: the durable queries know a and the append the hook holds,
	// not b; the decisions' view knows b as claimed.
	if _, ok := must2(durable.MissionRef(b))(t); ok {
		t.Error("a durable query sees a mission that is not durable")
	}
	if n := must(durable.Count())(t); n != 2 {
		t.Errorf("durable count %d while held, want 2", n)
	}
	if list, _ := must2(durable.List(projections.MissionFilter{}, projections.Page{Limit: 10}))(t); len(list) != 2 {
		t.Errorf("durable list of %d while held, want 2", len(list))
	}
	if ref, ok := must2(decisions.MissionRef(b))(t); !ok || ref.State != events.StateClaimed {
		t.Errorf("the decisions' view of b while held: %+v, %v", ref, ok)
	}

	unhold()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// Every decision has returned, so it is durable: both views agree.
	if ref, ok := must2(durable.MissionRef(b))(t); !ok || ref.State != events.StateClaimed || ref.ClaimerDID != did(4) {
		t.Errorf("durable b after release: %+v, %v", ref, ok)
	}
	for _, id := range []string{a, missionID(2), b} {
		same(id)
	}
	if must(durable.Count())(t) != 3 || must(decisions.Count())(t) != 3 {
		t.Errorf("counts: durable %d, decisions %d", must(durable.Count())(t), must(decisions.Count())(t))
	}
	c.rebuild(t)
}
