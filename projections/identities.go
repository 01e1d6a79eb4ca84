package projections

import (
	"sync"

	"github.com/civnode/civnode/eventlog/events"
)

// Identities is the read model of the civilization layer: agent identities, their
// controller bindings and profiles, per-agent stats, per-subnet counts and each
// agent's recent events. It folds identity.bootstrapped, identity.updated,
// controller_binding.updated and profile.updated, and of the missions the claims
// (mission.accepted, into the claimer's recent events) and the payments of
// settlements (payment.settled, into the paid agent's stats); other events leave
// it as it is.
//
// A node runs two of them over the same chain. The read model follows durable
// events (eventlog.Options.OnCommit) and answers queries; the decision model
// follows events as soon as the sequencer places them (OnSequenced) and is what
// commands consult inside eventlog.Log.Decide, so a decision sees every decision
// made before it. Both fold the same events in the same order and so end in the
// same state.
type Identities struct {
	mu      sync.RWMutex
	seq     uint64 // the last event applied
	skipped uint64 // events of our types that could not be applied (see Apply)
	byDID   map[string]*identity
	bySlug  map[string]*identity
	order   []*identity                    // by creation seq, for cursor paging
	refs    map[string]map[string]struct{} // controller_ref → agents actively bound to it
	homes   map[string]int                 // subnet → identities whose home it is
	members map[string]int                 // subnet → identities that list it in subnet_memberships
}

// identity is the state of one agent.
type identity struct {
	seq           uint64 // of identity.bootstrapped: the creation order
	did           string
	publicID      string
	displayName   string
	modelProvider *string
	capabilities  []string
	walletAdapter *string
	subnets       []string
	createdAt     string
	updatedAt     string
	binding       *binding
	profile       profile
	stats         Stats
	recent        []uint64 // seqs of the agent's latest events, oldest first
}

type binding struct {
	events.ControllerBindingUpdated
	createdAt string
	updatedAt string
}

type profile struct {
	events.ProfileUpdated
	updatedAt string
}

// recentEvents is how many of an agent's latest events are remembered for the
// supervision home view.
const recentEvents = 20

// NewIdentities returns an empty model.
func NewIdentities() *Identities {
	p := &Identities{}
	p.reset()
	return p
}

// Reset discards every state, as before the first event.
func (p *Identities) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reset()
}

func (p *Identities) reset() {
	p.seq, p.skipped = 0, 0
	p.byDID = map[string]*identity{}
	p.bySlug = map[string]*identity{}
	p.order = nil
	p.refs = map[string]map[string]struct{}{}
	p.homes = map[string]int{}
	p.members = map[string]int{}
}

// Seq is the seq of the last event applied.
func (p *Identities) Seq() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.seq
}

// Skipped counts events of this model's types that could not be applied. It stays
// 0 on a chain written by civnode's commands; anything else is a bug to report.
func (p *Identities) Skipped() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.skipped
}
