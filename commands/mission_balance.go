package commands

import (
	"fmt"

	"github.com/civnode/civnode/eventlog/events"
)

// MaxBalance is the largest amount a balance, a treasury or a node-wide total
// may reach: 2^53 − 1, the largest integer that every JSON client reads exactly
// (an IEEE double, as in JavaScript and RFC 8785). A settlement that would take
// any of them past it is refused.
//
// The bound is kept on the node's totals, what every settlement so far has paid
// (MissionReader.PaidTotal): credit, counting the agents' credit and the
// treasuries' shares together, reputation and capacity. Every balance and
// treasury is a part of its total, and so is every sum a view shows (GET
// /v1/state adds the governed treasuries to the node's own credit), so none of
// them can pass the bound either.
const MaxBalance = 1<<53 - 1

// checkBalanceBound refuses the settlement of mission missionID, paying r, when
// it would take one of the totals paid so far past MaxBalance: 409
// balance_overflow.
func checkBalanceBound(missionID string, paid, r events.Reward) error {
	for _, f := range []struct {
		what  string
		parts []int64
	}{
		{"credit (agent credit and treasury shares)",
			[]int64{paid.AgentCredit, paid.TreasuryShareCredit, r.AgentCredit, r.TreasuryShareCredit}},
		{"reputation", []int64{paid.Reputation, r.Reputation}},
		{"capacity", []int64{paid.Capacity, r.Capacity}},
	} {
		if !sumWithin(f.parts, MaxBalance) {
			return Conflict("balance_overflow", "", "settling mission %s would take the %s paid on this node past %d (2^53-1), "+
				"the largest amount every JSON client reads exactly; every balance, treasury and total is kept within it",
				missionID, f.what, int64(MaxBalance))
		}
	}
	return nil
}

// sumWithin reports whether every part and their sum lie in [0, limit]. With
// limit at most MaxBalance the sum of a few parts cannot overflow an int64,
// and a negative part (a chain no civnode wrote) fails rather than wraps.
func sumWithin(parts []int64, limit int64) bool {
	var sum int64
	for _, v := range parts {
		if v < 0 || v > limit {
			return false
		}
		sum += v
	}
	return sum <= limit
}

// paidTotal reads the totals paid so far from the decision model, inside a
// decision, so that no settlement decided before is missing from them.
func (c *Mission) paidTotal() (events.Reward, error) {
	paid, err := c.missions.PaidTotal()
	if err != nil {
		return events.Reward{}, fmt.Errorf("read the totals paid: %w", err)
	}
	return paid, nil
}
