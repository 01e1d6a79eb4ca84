package projections

import (
	"fmt"
	"slices"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// foldIdentity folds one event into the identities model. An event of one of
// its types whose payload is malformed or contradicts the state (an update of
// an unknown agent, a slug held by another) is refused: the caller rolls back
// whatever the handler wrote and counts it.
func foldIdentity(w writer, ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeIdentityBootstrapped:
		return applyBootstrapped(w, ev)
	case events.TypeIdentityUpdated:
		return applyIdentityUpdated(w, ev)
	case events.TypeControllerBindingUpdated:
		return applyBinding(w, ev)
	case events.TypeProfileUpdated:
		return applyProfile(w, ev)
	case events.TypeMissionAccepted:
		return applyClaim(w, ev)
	case events.TypePaymentSettled:
		return applyIdentityPayment(w, ev)
	case events.TypeOracleSettled:
		return applyOracleTransfer(w, ev)
	default:
		return errNotOurs
	}
}

// agent loads the identity an update is about.
func agent(r reader, did string) (*identityState, error) {
	id := &identityState{}
	ok, err := load(r, key(identityRecord, did), id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("unknown agent %s", did)
	}
	return id, nil
}

// saveIdentity records ev among id's recent events and stores id.
func saveIdentity(w writer, id *identityState, ev *eventlog.Event) error {
	if len(id.Recent) == recentEvents {
		id.Recent = slices.Delete(id.Recent, 0, 1)
	}
	id.Recent = append(id.Recent, ev.Seq)
	return store(w, key(identityRecord, id.DID), id)
}

// slugHolder returns the agent_did holding publicID, "" if none.
func slugHolder(r reader, publicID string) (string, error) {
	b, ok, err := r.Get(key(identitySlug, publicID))
	if err != nil {
		return "", storeErr(err)
	}
	if !ok {
		return "", nil
	}
	return string(b), nil
}

// count adds d to the metric counter of name and value; a nil value counts nothing.
func count(w writer, name string, value *string, d int64) error {
	if value == nil {
		return nil
	}
	return add(w, key(identityCount, name, *value), d)
}

var noValue = new(string) // the value of a metric that has none, such as the identity count

func applyBootstrapped(w writer, ev *eventlog.Event) error {
	var pl events.IdentityBootstrapped
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if _, ok, err := w.Get(key(identityRecord, pl.AgentDID)); err != nil {
		return storeErr(err)
	} else if ok {
		return fmt.Errorf("agent %s exists", pl.AgentDID)
	}
	if holder, err := slugHolder(w, pl.PublicID); err != nil {
		return err
	} else if holder != "" {
		return fmt.Errorf("public_id %s is taken", pl.PublicID)
	}
	id := &identityState{
		Seq: ev.Seq, DID: pl.AgentDID, PublicID: pl.PublicID, DisplayName: pl.DisplayName, KeySalt: pl.KeySalt,
		Capabilities: []string{}, Subnets: []string{},
		CreatedAt: ev.Timestamp, UpdatedAt: ev.Timestamp,
		Profile: profileState{ProfileUpdated: events.ProfileUpdated{AgentDID: pl.AgentDID}, UpdatedAt: ev.Timestamp},
	}
	w.Set(key(identitySlug, id.PublicID), []byte(id.DID))
	w.SetIndex(seqKey(append(key(identityOrder), 0), id.Seq), []byte(id.DID))
	if err := count(w, metricIdentities, noValue, 1); err != nil {
		return err
	}
	return saveIdentity(w, id, ev)
}

func applyIdentityUpdated(w writer, ev *eventlog.Event) error {
	var pl events.IdentityUpdated
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := agent(w, pl.AgentDID)
	if err != nil {
		return err
	}
	if holder, err := slugHolder(w, pl.PublicID); err != nil {
		return err
	} else if holder != "" && holder != id.DID {
		return fmt.Errorf("public_id %s is taken", pl.PublicID)
	}
	w.Delete(key(identitySlug, id.PublicID))
	w.Set(key(identitySlug, pl.PublicID), []byte(id.DID))
	for _, s := range id.Subnets {
		if err := count(w, metricMember, &s, -1); err != nil {
			return err
		}
	}
	id.PublicID, id.DisplayName = pl.PublicID, pl.DisplayName
	id.ModelProvider, id.WalletAdapter = pl.ModelProvider, pl.WalletAdapter
	id.Capabilities = nonNil(pl.CapabilitiesGranted)
	id.Subnets = nonNil(pl.SubnetMemberships)
	for _, s := range id.Subnets {
		if err := count(w, metricMember, &s, 1); err != nil {
			return err
		}
	}
	id.UpdatedAt = ev.Timestamp
	return saveIdentity(w, id, ev)
}

// holder is one agent actively bound to a controller_ref (key i/c).
type holder struct {
	Seq uint64 `json:"seq"` // the agent's creation seq
	DID string `json:"did"`
}

// bindingCounts adds d to the binding metrics b contributes to.
func bindingCounts(w writer, b *bindingState, d int64) error {
	if b == nil {
		return nil
	}
	if err := count(w, metricBindings, noValue, d); err != nil || !b.Active {
		return err
	}
	if err := count(w, metricActive, noValue, d); err != nil {
		return err
	}
	if err := count(w, metricKind, &b.ControllerKind, d); err != nil {
		return err
	}
	if b.OwnershipScope == events.ScopeShared {
		return count(w, metricShared, noValue, d)
	}
	return nil
}

func applyBinding(w writer, ev *eventlog.Event) error {
	var pl events.ControllerBindingUpdated
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := agent(w, pl.AgentDID)
	if err != nil {
		return err
	}
	created := ev.Timestamp
	if old := id.Binding; old != nil {
		created = old.CreatedAt
		if old.Active {
			if err := updateHolders(w, old.ControllerRef, func(hs []holder) []holder {
				return slices.DeleteFunc(hs, func(h holder) bool { return h.DID == id.DID })
			}); err != nil {
				return err
			}
		}
	}
	if err := bindingCounts(w, id.Binding, -1); err != nil {
		return err
	}
	id.Binding = &bindingState{ControllerBindingUpdated: pl, CreatedAt: created, UpdatedAt: ev.Timestamp}
	if err := bindingCounts(w, id.Binding, 1); err != nil {
		return err
	}
	if pl.Active {
		if err := updateHolders(w, pl.ControllerRef, func(hs []holder) []holder {
			i, _ := slices.BinarySearchFunc(hs, id.Seq, func(h holder, seq uint64) int { return compareSeq(h.Seq, seq) })
			return slices.Insert(hs, i, holder{Seq: id.Seq, DID: id.DID})
		}); err != nil {
			return err
		}
	}
	id.UpdatedAt = ev.Timestamp
	return saveIdentity(w, id, ev)
}

// updateHolders rewrites the agents bound to ref with change.
func updateHolders(w writer, ref string, change func([]holder) []holder) error {
	k := key(identityRef, ref)
	var hs []holder
	if _, err := load(w, k, &hs); err != nil {
		return err
	}
	if hs = change(hs); len(hs) == 0 {
		w.Delete(k)
		return nil
	}
	return store(w, k, hs)
}

func applyProfile(w writer, ev *eventlog.Event) error {
	var pl events.ProfileUpdated
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := agent(w, pl.AgentDID)
	if err != nil {
		return err
	}
	if err := profileCounts(w, &id.Profile.ProfileUpdated, -1); err != nil {
		return err
	}
	id.Profile = profileState{ProfileUpdated: pl, UpdatedAt: ev.Timestamp}
	if err := profileCounts(w, &pl, 1); err != nil {
		return err
	}
	return saveIdentity(w, id, ev)
}

// profileCounts adds d to the metrics p contributes to.
func profileCounts(w writer, p *events.ProfileUpdated, d int64) error {
	for _, c := range []struct {
		name  string
		value *string
	}{{metricFaction, p.Faction}, {metricRole, p.Role}, {metricStrategy, p.Strategy}, {metricHome, p.HomeSubnetID}} {
		if err := count(w, c.name, c.value, d); err != nil {
			return err
		}
	}
	return nil
}

// applyClaim remembers a claim among the claimer's recent events.
func applyClaim(w writer, ev *eventlog.Event) error {
	var pl events.MissionAccepted
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	id, err := agent(w, pl.ClaimerDID)
	if err != nil {
		return err
	}
	return saveIdentity(w, id, ev)
}

// applyIdentityPayment adds a settled mission's reward to the paid agent's
// stats. A payment.settled that names no mission (an x402 receipt) is not about
// stats.
func applyIdentityPayment(w writer, ev *eventlog.Event) error {
	var pl events.PaymentSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.MissionID == "" {
		return errNotOurs
	}
	id, err := agent(w, pl.ToDID)
	if err != nil {
		return err
	}
	var totals Stats
	if _, err := load(w, key(identityTotals), &totals); err != nil {
		return err
	}
	for _, s := range []*Stats{&id.Stats, &totals} {
		s.Credit += pl.AgentCredit
		s.Reputation += pl.Reputation
		s.Capacity += pl.Capacity
		s.MissionsCompleted++
	}
	if err := store(w, key(identityTotals), totals); err != nil {
		return err
	}
	return saveIdentity(w, id, ev)
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

// applyOracleTransfer moves a paid pull's price from the subscriber's credit
// to the publisher's: the same balances mission rewards are paid into. The
// node-wide totals do not change. A subscriber without the credit is refused;
// the oracle commands never append such a transfer.
func applyOracleTransfer(w writer, ev *eventlog.Event) error {
	var pl events.OracleSettled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.Price < 0 || pl.SubscriberDID == pl.PublisherDID {
		return fmt.Errorf("oracle transfer of %d credits from %s to %s", pl.Price, pl.SubscriberDID, pl.PublisherDID)
	}
	from, err := agent(w, pl.SubscriberDID)
	if err != nil {
		return err
	}
	to, err := agent(w, pl.PublisherDID)
	if err != nil {
		return err
	}
	if from.Stats.Credit < pl.Price {
		return fmt.Errorf("%s has %d credits, less than the %d it pays", pl.SubscriberDID, from.Stats.Credit, pl.Price)
	}
	from.Stats.Credit -= pl.Price
	to.Stats.Credit += pl.Price
	if err := saveIdentity(w, from, ev); err != nil {
		return err
	}
	return saveIdentity(w, to, ev)
}
