package commands_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// ledgerWorld is a mission node with a publisher and a claimer, both bound.
type ledgerWorld struct {
	*missionNode
	pubDID string
}

func newLedgerWorld(t *testing.T) *ledgerWorld {
	t.Helper()
	n := newMissionNode(t)
	w := &ledgerWorld{missionNode: n, pubDID: n.agent("pub", "order", "broker", true)}
	n.agent("ada", "order", "enforcer", true)
	return w
}

// completed returns a completed mission of pub, claimed by ada, with reward r.
// Rewards within the create bound go through Create; a larger one is appended
// as a raw mission.created, as on a chain that already holds amounts near the
// balance bound (reaching it through the API takes some 9,000 settlements of
// the largest reward, too slow for a unit test).
func (w *ledgerWorld) completed(r events.Reward) string {
	w.t.Helper()
	ctx := context.Background()
	var id string
	if r.AgentCredit <= 1e12 && r.Reputation <= 1e12 && r.Capacity <= 1e12 && r.TreasuryShareCredit <= 1e12 {
		in := createInput("pub", "organization")
		in.Reward = &commands.RewardInput{AgentCredit: &r.AgentCredit, Reputation: &r.Reputation,
			Capacity: &r.Capacity, TreasuryShareCredit: &r.TreasuryShareCredit}
		res, err := w.mission.Create(ctx, owner, in)
		if err != nil {
			w.t.Fatal(err)
		}
		id = res.MissionID
	} else {
		id = uuid.NewString()
		if _, err := w.log.Append(ctx, eventlog.Draft{Type: events.TypeMissionCreated, Payload: events.MissionCreated{
			MissionID: id, Title: "Haul", Description: "Haul the treasury.", Publisher: "pub",
			PublisherKind: events.PublisherOrganization, IssuerDID: w.pubDID, Domain: "trade", SubnetID: "genesis",
			Reward: r, Payload: json.RawMessage(`{}`)}}); err != nil {
			w.t.Fatal(err)
		}
	}
	if _, err := w.mission.Claim(ctx, owner, id, commands.ClaimMissionInput{Claimer: "ada"}); err != nil {
		w.t.Fatal(err)
	}
	result := "done"
	if _, err := w.mission.Complete(ctx, owner, id, commands.CompleteMissionInput{Result: &result}); err != nil {
		w.t.Fatal(err)
	}
	return id
}

func (w *ledgerWorld) settle(id string) error {
	_, err := w.mission.Settle(context.Background(), owner, id, commands.SettleMissionInput{})
	return err
}

// TestSettlementBalanceBound: a settlement that would take any balance,
// treasury or total past 2^53-1, the largest integer every JSON client reads
// exactly, is 409 balance_overflow and appends nothing; one that reaches the
// bound exactly is paid.
func TestSettlementBalanceBound(t *testing.T) {
	const max = commands.MaxBalance
	if max != 1<<53-1 {
		t.Fatalf("MaxBalance = %d, want 2^53-1", int64(max))
	}
	for _, tc := range []struct {
		name        string
		first, over events.Reward // first takes a figure to its bound less a little; over passes it
		exact       events.Reward // what still fits after first
		what        string        // the figure the refusal names
	}{
		{"agent credit", events.Reward{AgentCredit: max - 10}, events.Reward{AgentCredit: 11}, events.Reward{AgentCredit: 10}, "credit"},
		{"treasury share", events.Reward{TreasuryShareCredit: max - 10}, events.Reward{TreasuryShareCredit: 11}, events.Reward{TreasuryShareCredit: 10}, "credit"},
		{"credit to agents and treasuries together", events.Reward{AgentCredit: max - 20, TreasuryShareCredit: 10},
			events.Reward{AgentCredit: 5, TreasuryShareCredit: 6}, events.Reward{AgentCredit: 5, TreasuryShareCredit: 5}, "credit"},
		{"reputation", events.Reward{Reputation: max - 1}, events.Reward{Reputation: 2}, events.Reward{Reputation: 1}, "reputation"},
		{"capacity", events.Reward{Capacity: max}, events.Reward{Capacity: 1}, events.Reward{}, "capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newLedgerWorld(t)
			if err := w.settle(w.completed(tc.first)); err != nil {
				t.Fatalf("first settlement: %v", err)
			}
			over, exact := w.completed(tc.over), w.completed(tc.exact)
			balance := must(w.missions.Balance(w.dids("ada")))
			tip := w.log.Tip().Seq
			err := w.settle(over)
			(&idNode{log: w.log}).refused(t, err, tip, commands.KindConflict, "balance_overflow", "")
			if err != nil && !strings.Contains(err.Error(), tc.what) {
				t.Errorf("refusal %q does not name the %s", err, tc.what)
			}
			if m, _ := found(w.mD.MissionRef(over)); m.State != events.StateCompleted {
				t.Errorf("refused mission is %s, want completed", m.State)
			}
			if got := must(w.missions.Balance(w.dids("ada"))); got != balance {
				t.Errorf("balance moved on a refused settlement: %+v → %+v", balance, got)
			}
			if err := w.settle(exact); err != nil {
				t.Fatalf("a settlement that reaches the bound exactly: %v", err)
			}
		})
	}
}

// TestConcurrentSettlementsCannotOverflowTogether: two settlements that each
// fit under the bound but not both are decided one after the other against
// the decision model, so exactly one is paid.
func TestConcurrentSettlementsCannotOverflowTogether(t *testing.T) {
	w := newLedgerWorld(t)
	if err := w.settle(w.completed(events.Reward{AgentCredit: commands.MaxBalance - 15})); err != nil {
		t.Fatal(err)
	}
	const racers = 8
	ids := make([]string, racers)
	for i := range ids {
		ids[i] = w.completed(events.Reward{AgentCredit: 10})
	}
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = w.settle(ids[i])
		}()
	}
	close(start)
	wg.Wait()
	paid := 0
	for _, err := range errs {
		switch outcome := actual(err); outcome {
		case "":
			paid++
		case refusal(commands.KindConflict, "balance_overflow"):
		default:
			t.Errorf("settlement: %s", outcome)
		}
	}
	if paid != 1 {
		t.Fatalf("%d of %d settlements were paid, want exactly 1", paid, racers)
	}
	if b := must(w.missions.Balance(w.dids("ada"))); b.Credit != commands.MaxBalance-5 {
		t.Errorf("credit = %d, want %d", b.Credit, int64(commands.MaxBalance-5))
	}
}

// TestRewardBoundAtCreate: each reward field is at most 10^12 when a mission
// is created, far below the balance bound, so one reward never passes it.
func TestRewardBoundAtCreate(t *testing.T) {
	w := newLedgerWorld(t)
	for _, v := range []int64{1e12 + 1, commands.MaxBalance, commands.MaxBalance + 1, -1} {
		for _, field := range []string{"agent_credit", "reputation", "capacity", "treasury_share_credit"} {
			in := createInput("pub", "organization")
			r := *in.Reward
			switch field {
			case "agent_credit":
				r.AgentCredit = &v
			case "reputation":
				r.Reputation = &v
			case "capacity":
				r.Capacity = &v
			case "treasury_share_credit":
				r.TreasuryShareCredit = &v
			}
			in.Reward = &r
			tip := w.log.Tip().Seq
			_, err := w.mission.Create(context.Background(), owner, in)
			(&idNode{log: w.log}).refused(t, err, tip, commands.KindInvalid, "invalid_field", "reward."+field)
		}
	}
}

// dids returns the agent DID of slug.
func (n *missionNode) dids(slug string) string {
	n.t.Helper()
	id, ok := found(n.idsD.IdentityBySlug(slug))
	if !ok {
		n.t.Fatalf("no identity %s", slug)
	}
	return id.AgentDID
}
