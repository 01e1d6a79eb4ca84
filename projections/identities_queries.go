package projections

import (
	"slices"

	"github.com/civnode/civnode/eventlog/events"
)

// IdentityByDID returns what commands need to know of the identity agentDID
// (commands.IdentityReader).
func (p *Identities) IdentityByDID(agentDID string) (events.IdentityRef, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.byDID[agentDID]
	if !ok {
		return events.IdentityRef{}, false
	}
	return id.ref(), true
}

// IdentityBySlug is IdentityByDID by public_id.
func (p *Identities) IdentityBySlug(publicID string) (events.IdentityRef, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.bySlug[publicID]
	if !ok {
		return events.IdentityRef{}, false
	}
	return id.ref(), true
}

// ActiveBindingsByRef returns the active bindings to controller ref, ordered by
// agent creation (commands.ControllerReader).
func (p *Identities) ActiveBindingsByRef(ref string) []events.ControllerBindingUpdated {
	p.mu.RLock()
	defer p.mu.RUnlock()
	holders := p.refs[ref]
	if len(holders) == 0 {
		return nil
	}
	ids := make([]*identity, 0, len(holders))
	for did := range holders {
		ids = append(ids, p.byDID[did])
	}
	slices.SortFunc(ids, func(a, b *identity) int { return compareSeq(a.seq, b.seq) })
	out := make([]events.ControllerBindingUpdated, len(ids))
	for i, id := range ids {
		out[i] = id.binding.ControllerBindingUpdated
	}
	return out
}

// Record returns the identity record of agentDID.
func (p *Identities) Record(agentDID string) (IdentityRecord, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.byDID[agentDID]
	if !ok {
		return IdentityRecord{}, false
	}
	return id.record(), true
}

// RecordBySlug returns the identity record of publicID.
func (p *Identities) RecordBySlug(publicID string) (IdentityRecord, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.bySlug[publicID]
	if !ok {
		return IdentityRecord{}, false
	}
	return id.record(), true
}

// Binding returns the controller binding of agentDID. known is whether the
// identity exists; ok whether it has a binding.
func (p *Identities) Binding(agentDID string) (b BindingRecord, known, ok bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, known := p.byDID[agentDID]
	if !known || id.binding == nil {
		return BindingRecord{}, known, false
	}
	return id.binding.record(), true, true
}

// Profile returns the profile of agentDID.
func (p *Identities) Profile(agentDID string) (ProfileRecord, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.byDID[agentDID]
	if !ok {
		return ProfileRecord{}, false
	}
	return id.profile.record(), true
}

// IdentityProfile returns the profile of agentDID as its last profile.updated
// set it (commands.ProfileReader).
func (p *Identities) IdentityProfile(agentDID string) (events.ProfileUpdated, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.byDID[agentDID]
	if !ok {
		return events.ProfileUpdated{}, false
	}
	return id.profile.ProfileUpdated, true
}

// RecentEvents returns the seqs of the latest events about agentDID (at most 20),
// oldest first.
func (p *Identities) RecentEvents(agentDID string) []uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.byDID[agentDID]
	if !ok {
		return nil
	}
	return slices.Clone(id.recent)
}

func compareSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AgentDIDForPublicID resolves a public_id to its agent DID (the token service's
// commands.PublicIDResolver).
func (p *Identities) AgentDIDForPublicID(publicID string) (string, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.bySlug[publicID]
	if !ok {
		return "", false
	}
	return id.did, true
}

// PublicIDOf returns the current public_id of an agent DID (the token service
// shows it beside agent tokens).
func (p *Identities) PublicIDOf(agentDID string) (string, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, ok := p.byDID[agentDID]
	if !ok {
		return "", false
	}
	return id.publicID, true
}
