package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// SettleMissionInput settles a mission (POST /v1/core/missions/{mission_id}/settle).
// The body is an empty object; it has no fields.
type SettleMissionInput struct{}

// Settle closes a completed mission for good and pays its reward: mission.settled
// and payment.settled are appended as one unit, so a mission is never settled
// without being paid, nor paid twice. Only a token that acts for the publisher
// (the identity that issued the mission, or for a subnet's mission a governance
// actor of that subnet) or a governance actor of the mission's subnet_id may
// settle (403 forbidden), and only a completed mission (409 invalid_state). A
// settlement that would take a balance, a treasury or a total past MaxBalance
// is 409 balance_overflow, and the mission stays completed.
func (c *Mission) Settle(ctx context.Context, a Actor, missionID string, _ SettleMissionInput) (MissionResult, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return MissionResult{}, err
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		m, err := c.mission(missionID)
		if err != nil {
			return nil, err
		}
		by, ok, err := c.settler(a, m)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, Forbidden("forbidden", "only the publisher %s or a governance actor of subnet %s may settle this mission", m.Publisher, m.SubnetID)
		}
		if m.State != events.StateCompleted {
			return nil, invalidState("mission %s is %s; only a completed mission can be settled", m.MissionID, m.State)
		}
		r := m.Reward
		paid, err := c.paidTotal()
		if err != nil {
			return nil, err
		}
		if err := checkBalanceBound(m.MissionID, paid, r); err != nil {
			return nil, err
		}
		return []eventlog.Draft{
			{Type: events.TypeMissionSettled, Payload: events.MissionSettled{MissionID: m.MissionID, SettledBy: by, Reward: r}},
			{Type: events.TypePaymentSettled, Payload: events.PaymentSettled{
				MissionID: m.MissionID, To: m.Claimer, ToDID: m.ClaimerDID,
				AgentCredit: r.AgentCredit, Reputation: r.Reputation, Capacity: r.Capacity,
				Treasury: m.SubnetID, TreasuryShareCredit: r.TreasuryShareCredit,
			}},
		}, nil
	})
	if err != nil {
		return MissionResult{}, err
	}
	return MissionResult{MissionID: missionID, Events: evs}, nil
}

// settler returns the DID a settles m as: the publisher it acts for, else the
// node's as governance actor of the subnet. It runs inside a decision.
func (c *Mission) settler(a Actor, m events.MissionRef) (string, bool, error) {
	node := c.log.NodeDID()
	if m.PublisherKind == events.PublisherPlanetaryGovernment {
		if a.GovernsSubnet(m.Publisher) {
			return m.IssuerDID, true, nil
		}
	} else if id, ok, err := c.ids.IdentityByDID(m.IssuerDID); err != nil {
		return "", false, err
	} else if ok && a.ActsFor(node, id) {
		return m.IssuerDID, true, nil
	}
	if a.GovernsSubnet(m.SubnetID) {
		return node, true, nil
	}
	return "", false, nil
}
