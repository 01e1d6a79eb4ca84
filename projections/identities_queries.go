package projections

import (
	"github.com/civnode/civnode/eventlog/events"
)

// identity loads the identity of agentDID.
func (p *Identities) identity(agentDID string) (*identityState, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return nil, false, err
	}
	defer done()
	id := &identityState{}
	ok, err := load(r, key(identityRecord, agentDID), id)
	if !ok || err != nil {
		return nil, false, err
	}
	return id, true, nil
}

// identityBySlug loads the identity whose public_id is publicID.
func (p *Identities) identityBySlug(publicID string) (*identityState, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return nil, false, err
	}
	defer done()
	did, err := slugHolder(r, publicID)
	if did == "" || err != nil {
		return nil, false, err
	}
	id := &identityState{}
	ok, err := load(r, key(identityRecord, did), id)
	if !ok || err != nil {
		return nil, false, err
	}
	return id, true, nil
}

// IdentityByDID returns what commands need to know of the identity agentDID
// (commands.IdentityReader).
func (p *Identities) IdentityByDID(agentDID string) (events.IdentityRef, bool, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return events.IdentityRef{}, false, err
	}
	return id.ref(), true, nil
}

// IdentityBySlug is IdentityByDID by public_id. The token service resolves an
// agent token's acts_for with it (commands.PublicIDResolver).
func (p *Identities) IdentityBySlug(publicID string) (events.IdentityRef, bool, error) {
	id, ok, err := p.identityBySlug(publicID)
	if !ok || err != nil {
		return events.IdentityRef{}, false, err
	}
	return id.ref(), true, nil
}

// ActiveBindingsByRef returns the active bindings to controller ref, ordered by
// agent creation (commands.ControllerReader).
func (p *Identities) ActiveBindingsByRef(ref string) ([]events.ControllerBindingUpdated, error) {
	r, done, err := p.reader()
	if err != nil {
		return nil, err
	}
	defer done()
	var hs []holder
	if _, err := load(r, key(identityRef, ref), &hs); err != nil || len(hs) == 0 {
		return nil, err
	}
	out := make([]events.ControllerBindingUpdated, 0, len(hs))
	for _, h := range hs {
		id := &identityState{}
		ok, err := load(r, key(identityRecord, h.DID), id)
		if err != nil {
			return nil, err
		}
		if ok && id.Binding != nil {
			out = append(out, id.Binding.ControllerBindingUpdated)
		}
	}
	return out, nil
}

// Record returns the identity record of agentDID.
func (p *Identities) Record(agentDID string) (IdentityRecord, bool, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return IdentityRecord{}, false, err
	}
	return id.record(), true, nil
}

// RecordBySlug returns the identity record of publicID.
func (p *Identities) RecordBySlug(publicID string) (IdentityRecord, bool, error) {
	id, ok, err := p.identityBySlug(publicID)
	if !ok || err != nil {
		return IdentityRecord{}, false, err
	}
	return id.record(), true, nil
}

// Binding returns the controller binding of agentDID. known is whether the
// identity exists; ok whether it has a binding.
func (p *Identities) Binding(agentDID string) (b BindingRecord, known, ok bool, err error) {
	id, known, err := p.identity(agentDID)
	if !known || err != nil || id.Binding == nil {
		return BindingRecord{}, known, false, err
	}
	return id.Binding.record(), true, true, nil
}

// Profile returns the profile of agentDID.
func (p *Identities) Profile(agentDID string) (ProfileRecord, bool, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return ProfileRecord{}, false, err
	}
	return id.Profile.record(), true, nil
}

// IdentityProfile returns the profile of agentDID as its last profile.updated
// set it (commands.ProfileReader).
func (p *Identities) IdentityProfile(agentDID string) (events.ProfileUpdated, bool, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return events.ProfileUpdated{}, false, err
	}
	return id.Profile.ProfileUpdated, true, nil
}

// RecentEvents returns the seqs of the latest events about agentDID (at most 20),
// oldest first.
func (p *Identities) RecentEvents(agentDID string) ([]uint64, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return nil, err
	}
	return id.Recent, nil
}

// PublicIDOf returns the current public_id of an agent DID (the token service
// shows it beside agent tokens).
func (p *Identities) PublicIDOf(agentDID string) (string, bool, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return "", false, err
	}
	return id.PublicID, true, nil
}

// KeySalt returns the key_salt of a bootstrapped identity, from which the
// node derives its key; ok is false for an unknown identity or one imported
// with a key of its own (commands.OracleIdentities).
func (p *Identities) KeySalt(agentDID string) (string, bool, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil || id.KeySalt == "" {
		return "", false, err
	}
	return id.KeySalt, true, nil
}

// Credit returns an identity's credit balance: what missions paid it, plus
// what oracle pulls paid it, less what its pulls cost; 0 for an unknown one.
func (p *Identities) Credit(agentDID string) (int64, error) {
	id, ok, err := p.identity(agentDID)
	if !ok || err != nil {
		return 0, err
	}
	return id.Stats.Credit, nil
}
