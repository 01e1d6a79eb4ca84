package projections

import (
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// ApplyEvents applies events in order. Its signature fits eventlog.Options.OnCommit
// and OnSequenced. Events that cannot be applied are counted in Skipped.
func (p *Identities) ApplyEvents(evs []eventlog.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range evs {
		p.apply(&evs[i])
	}
}

// Apply folds one event into the model. It is deterministic: the state depends
// only on the events applied, in seq order. An event at or below the last seq
// applied is ignored, so feeding an event twice is harmless. An event of one of
// this model's types whose payload is malformed or contradicts the state (an
// update of an unknown agent, a slug held by another) changes nothing and is
// reported as an error; the chain holds no such event when only civnode's
// commands wrote it.
func (p *Identities) Apply(ev eventlog.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.apply(&ev)
}

func (p *Identities) apply(ev *eventlog.Event) error {
	return fold(ev, &p.seq, &p.skipped, p.handle)
}

// handle folds one event of this model's types.
func (p *Identities) handle(ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeIdentityBootstrapped:
		return p.applyBootstrapped(ev)
	case events.TypeIdentityUpdated:
		return p.applyIdentityUpdated(ev)
	case events.TypeControllerBindingUpdated:
		return p.applyBinding(ev)
	case events.TypeProfileUpdated:
		return p.applyProfile(ev)
	case events.TypeMissionAccepted:
		return p.applyClaim(ev)
	case events.TypePaymentSettled:
		return p.applyPayment(ev)
	default:
		return errNotOurs
	}
}

// agent finds the identity an update is about.
func (p *Identities) agent(did string) (*identity, error) {
	id, ok := p.byDID[did]
	if !ok {
		return nil, fmt.Errorf("unknown agent %s", did)
	}
	return id, nil
}

func (p *Identities) applyBootstrapped(ev *eventlog.Event) error {
	var pl events.IdentityBootstrapped
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if _, dup := p.byDID[pl.AgentDID]; dup {
		return fmt.Errorf("agent %s exists", pl.AgentDID)
	}
	if _, dup := p.bySlug[pl.PublicID]; dup {
		return fmt.Errorf("public_id %s is taken", pl.PublicID)
	}
	id := &identity{
		seq: ev.Seq, did: pl.AgentDID, publicID: pl.PublicID, displayName: pl.DisplayName,
		capabilities: []string{}, subnets: []string{},
		createdAt: ev.Timestamp, updatedAt: ev.Timestamp,
		profile: profile{ProfileUpdated: events.ProfileUpdated{AgentDID: pl.AgentDID}, updatedAt: ev.Timestamp},
	}
	p.byDID[id.did] = id
	p.bySlug[id.publicID] = id
	p.order = append(p.order, id)
	id.remember(ev.Seq)
	return nil
}

func (p *Identities) applyIdentityUpdated(ev *eventlog.Event) error {
	var pl events.IdentityUpdated
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := p.agent(pl.AgentDID)
	if err != nil {
		return err
	}
	if other, taken := p.bySlug[pl.PublicID]; taken && other != id {
		return fmt.Errorf("public_id %s is taken", pl.PublicID)
	}
	delete(p.bySlug, id.publicID)
	p.bySlug[pl.PublicID] = id
	for _, s := range id.subnets {
		decrement(p.members, s)
	}
	id.publicID, id.displayName = pl.PublicID, pl.DisplayName
	id.modelProvider, id.walletAdapter = pl.ModelProvider, pl.WalletAdapter
	id.capabilities = nonNil(pl.CapabilitiesGranted)
	id.subnets = nonNil(pl.SubnetMemberships)
	for _, s := range id.subnets {
		p.members[s]++
	}
	id.updatedAt = ev.Timestamp
	id.remember(ev.Seq)
	return nil
}

func (p *Identities) applyBinding(ev *eventlog.Event) error {
	var pl events.ControllerBindingUpdated
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := p.agent(pl.AgentDID)
	if err != nil {
		return err
	}
	created := ev.Timestamp
	if old := id.binding; old != nil {
		created = old.createdAt
		if old.Active {
			p.unbindRef(old.ControllerRef, id.did)
		}
	}
	id.binding = &binding{ControllerBindingUpdated: pl, createdAt: created, updatedAt: ev.Timestamp}
	if pl.Active {
		holders := p.refs[pl.ControllerRef]
		if holders == nil {
			holders = map[string]struct{}{}
			p.refs[pl.ControllerRef] = holders
		}
		holders[id.did] = struct{}{}
	}
	id.updatedAt = ev.Timestamp
	id.remember(ev.Seq)
	return nil
}

func (p *Identities) unbindRef(ref, did string) {
	holders := p.refs[ref]
	delete(holders, did)
	if len(holders) == 0 {
		delete(p.refs, ref)
	}
}

func (p *Identities) applyProfile(ev *eventlog.Event) error {
	var pl events.ProfileUpdated
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := p.agent(pl.AgentDID)
	if err != nil {
		return err
	}
	if h := id.profile.HomeSubnetID; h != nil {
		decrement(p.homes, *h)
	}
	id.profile = profile{ProfileUpdated: pl, updatedAt: ev.Timestamp}
	if h := pl.HomeSubnetID; h != nil {
		p.homes[*h]++
	}
	id.remember(ev.Seq)
	return nil
}

// applyClaim remembers a claim among the claimer's recent events.
func (p *Identities) applyClaim(ev *eventlog.Event) error {
	var pl events.MissionAccepted
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := p.agent(pl.ClaimerDID)
	if err != nil {
		return err
	}
	id.remember(ev.Seq)
	return nil
}

// applyPayment adds a settled mission's reward to the paid agent's stats. A
// payment.settled that names no mission (an x402 receipt) is not about stats.
func (p *Identities) applyPayment(ev *eventlog.Event) error {
	var pl events.PaymentSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.MissionID == "" {
		return errNotOurs
	}
	id, err := p.agent(pl.ToDID)
	if err != nil {
		return err
	}
	id.stats.Credit += pl.AgentCredit
	id.stats.Reputation += pl.Reputation
	id.stats.Capacity += pl.Capacity
	id.stats.MissionsCompleted++
	id.remember(ev.Seq)
	return nil
}

// remember records seq among the agent's recent events, dropping the oldest.
func (id *identity) remember(seq uint64) {
	if len(id.recent) == recentEvents {
		copy(id.recent, id.recent[1:])
		id.recent = id.recent[:recentEvents-1]
	}
	id.recent = append(id.recent, seq)
}

func decrement(m map[string]int, k string) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
