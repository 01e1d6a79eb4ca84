package projections

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// ApplyEvents applies events in order. Its signature fits eventlog.Options.OnCommit
// and OnSequenced. Events that cannot be applied are counted in Skipped.
func (p *Missions) ApplyEvents(evs []eventlog.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range evs {
		p.apply(&evs[i])
	}
}

// Apply folds one event into the model. It is deterministic: the state depends
// only on the events applied, in seq order. An event at or below the last seq
// applied is ignored. A mission event whose payload is malformed or that the
// state machine forbids (a claim of a mission that is not created, a second
// payment) changes nothing and is reported as an error; the chain holds no such
// event when only civnode's commands wrote it.
func (p *Missions) Apply(ev eventlog.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.apply(&ev)
}

func (p *Missions) apply(ev *eventlog.Event) error {
	return fold(ev, &p.seq, &p.skipped, p.handle)
}

// handle folds one event of this model's types.
func (p *Missions) handle(ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeMissionCreated:
		return p.applyCreated(ev)
	case events.TypeMissionAccepted:
		return p.applyAccepted(ev)
	case events.TypeMissionCompleted:
		return p.applyCompleted(ev)
	case events.TypeMissionSettled:
		return p.applySettled(ev)
	case events.TypePaymentSettled:
		return p.applyPayment(ev)
	default:
		return errNotOurs
	}
}

// missionIn returns the mission id names if it is in state.
func (p *Missions) missionIn(id, state string) (*mission, error) {
	m, ok := p.byID[id]
	if !ok {
		return nil, fmt.Errorf("unknown mission %q", id)
	}
	if m.state != state {
		return nil, fmt.Errorf("mission %s is %s, not %s", id, m.state, state)
	}
	return m, nil
}

func (p *Missions) applyCreated(ev *eventlog.Event) error {
	var pl events.MissionCreated
	if p.decisions {
		// The rules need neither the texts nor the payload's content.
		var lean struct {
			MissionID       string          `json:"mission_id"`
			Publisher       string          `json:"publisher"`
			PublisherKind   string          `json:"publisher_kind"`
			IssuerDID       string          `json:"issuer_did"`
			SubnetID        string          `json:"subnet_id"`
			RequiredRole    *string         `json:"required_role"`
			RequiredFaction *string         `json:"required_faction"`
			Reward          events.Reward   `json:"reward"`
			Payload         json.RawMessage `json:"payload"`
		}
		if err := decodePayload(ev, &lean); err != nil {
			return err
		}
		pl = events.MissionCreated{MissionID: lean.MissionID, Publisher: lean.Publisher, PublisherKind: lean.PublisherKind,
			IssuerDID: lean.IssuerDID, SubnetID: lean.SubnetID, RequiredRole: lean.RequiredRole,
			RequiredFaction: lean.RequiredFaction, Reward: lean.Reward}
		if len(lean.Payload) > 0 {
			pl.Payload = json.RawMessage{lean.Payload[0]} // enough for the check below
		}
	} else if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.MissionID == "" {
		return errors.New("no mission_id")
	}
	if _, dup := p.byID[pl.MissionID]; dup {
		return fmt.Errorf("mission %s exists", pl.MissionID)
	}
	if len(pl.Payload) == 0 || pl.Payload[0] != '{' {
		return errors.New("payload is not an object")
	}
	if r := pl.Reward; r.AgentCredit < 0 || r.Reputation < 0 || r.Capacity < 0 || r.TreasuryShareCredit < 0 {
		return errors.New("negative reward")
	}
	m := &mission{seq: ev.Seq, MissionCreated: pl, state: events.StateCreated,
		createdAt: ev.Timestamp, updatedAt: ev.Timestamp}
	p.byID[m.MissionID] = m
	if !p.decisions {
		p.all.add(m)
	}
	p.index(p.byState, m.state, m)
	p.index(p.bySubnet, m.SubnetID, m)
	p.index(p.byDomain, m.Domain, m)
	if m.RequiredRole != nil {
		p.index(p.byRole, *m.RequiredRole, m)
	}
	p.index(p.byPublisher, m.Publisher, m)
	p.index(p.byIssuer, m.IssuerDID, m)
	p.index(p.active, m.IssuerDID, m)
	p.remember(m, ev)
	return nil
}

// index adds m to the index of key in indexes; a decision model keeps no lists.
func (p *Missions) index(indexes map[string]*missionIndex, key string, m *mission) {
	if !p.decisions {
		indexOf(indexes, key).add(m)
	}
}

// remember records ev among the events about m; a decision model does not.
func (p *Missions) remember(m *mission, ev *eventlog.Event) {
	if !p.decisions {
		m.eventIDs = append(m.eventIDs, ev.ID)
	}
}

// move changes m's state and its state index.
func (p *Missions) move(m *mission, state string, ev *eventlog.Event) {
	dropFrom(p.byState, m.state, m)
	m.state = state
	p.index(p.byState, state, m)
	m.updatedAt = ev.Timestamp
	p.remember(m, ev)
}

func (p *Missions) applyAccepted(ev *eventlog.Event) error {
	var pl events.MissionAccepted
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	m, err := p.missionIn(pl.MissionID, events.StateCreated)
	if err != nil {
		return err
	}
	if pl.Claimer == "" || pl.ClaimerDID == "" {
		return errors.New("no claimer")
	}
	claimer, at := pl.Claimer, ev.Timestamp
	m.claimer, m.claimerDID, m.claimedAt = &claimer, pl.ClaimerDID, &at
	p.move(m, events.StateClaimed, ev)
	p.index(p.byClaimer, m.claimerDID, m)
	p.index(p.active, m.claimerDID, m)
	return nil
}

func (p *Missions) applyCompleted(ev *eventlog.Event) error {
	var pl events.MissionCompleted
	if p.decisions {
		// The result, up to 256 KiB, is for the publisher to read, not for rules.
		var lean struct {
			MissionID string `json:"mission_id"`
		}
		if err := decodePayload(ev, &lean); err != nil {
			return err
		}
		pl.MissionID = lean.MissionID
	} else if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	m, err := p.missionIn(pl.MissionID, events.StateClaimed)
	if err != nil {
		return err
	}
	result, at := pl.Result, ev.Timestamp
	m.result, m.completedAt = &result, &at
	p.move(m, events.StateCompleted, ev)
	return nil
}

func (p *Missions) applySettled(ev *eventlog.Event) error {
	var pl events.MissionSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	m, err := p.missionIn(pl.MissionID, events.StateCompleted)
	if err != nil {
		return err
	}
	at := ev.Timestamp
	m.settledAt, m.settledBy = &at, pl.SettledBy
	p.move(m, events.StateSettled, ev)
	dropFrom(p.active, m.IssuerDID, m)
	dropFrom(p.active, m.claimerDID, m)
	return nil
}

// applyPayment credits the settlement of a mission: the agent's balance and the
// subnet's treasury. Each settled mission is paid exactly once.
func (p *Missions) applyPayment(ev *eventlog.Event) error {
	var pl events.PaymentSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.MissionID == "" {
		return errNotOurs
	}
	m, err := p.missionIn(pl.MissionID, events.StateSettled)
	if err != nil {
		return err
	}
	switch {
	case m.paid:
		return fmt.Errorf("mission %s is paid already", m.MissionID)
	case pl.ToDID != m.claimerDID || pl.Treasury != m.SubnetID:
		return fmt.Errorf("payment of mission %s goes to %s and %s, not its claimer and subnet", m.MissionID, pl.ToDID, pl.Treasury)
	case pl.AgentCredit != m.Reward.AgentCredit || pl.Reputation != m.Reward.Reputation ||
		pl.Capacity != m.Reward.Capacity || pl.TreasuryShareCredit != m.Reward.TreasuryShareCredit:
		return fmt.Errorf("payment of mission %s differs from its reward", m.MissionID)
	}
	m.paid = true
	p.remember(m, ev)
	b := p.balances[pl.ToDID]
	if b == nil {
		b = &Stats{}
		p.balances[pl.ToDID] = b
	}
	b.Credit += pl.AgentCredit
	b.Reputation += pl.Reputation
	b.Capacity += pl.Capacity
	b.MissionsCompleted++
	p.treasuries[pl.Treasury] += pl.TreasuryShareCredit
	p.paid.AgentCredit += pl.AgentCredit
	p.paid.Reputation += pl.Reputation
	p.paid.Capacity += pl.Capacity
	p.paid.TreasuryShareCredit += pl.TreasuryShareCredit
	p.settlements = append(p.settlements, settlement{micros: ev.Time().UnixMicro(), total: p.paid, count: len(p.settlements) + 1})
	return nil
}
