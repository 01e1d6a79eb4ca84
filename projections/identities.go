package projections

// Identities answers the queries of the civilization layer from the identities
// read model: agent identities, their controller bindings and profiles,
// per-agent stats, per-subnet counts and each agent's recent events. The model
// folds identity.bootstrapped, identity.updated, controller_binding.updated and
// profile.updated, and of the missions the claims (mission.accepted, into the
// claimer's recent events) and the payments of settlements (payment.settled,
// into the paid agent's stats); other events leave it as it is
// (identities_apply.go).
//
// Its state lives in the log's model space under these keys:
//
//	i/r 0 <agent_did>          the identity (identityState, JSON)
//	i/s 0 <public_id>          agent_did
//	i/o 0 <seq>                agent_did, in creation order, for cursor paging
//	i/c 0 <controller_ref>     the agents actively bound to it, in creation order
//	i/n 0 <metric> 0 <value>   a count for the metrics: identities, faction,
//	                           role, strategy, home (home_subnet_id), member
//	                           (subnet_memberships), bindings, active, kind,
//	                           shared
//	i/t                        every identity's stats, summed
//	i/k                        events the model could not apply
type Identities struct{ queries }

// NewIdentities returns the queries of the identities model kept in src; they
// see durable state only.
func NewIdentities(src Source) *Identities { return &Identities{queries{src: src}} }

// Decisions returns the same model read at its newest state, sequenced events
// included: what commands consult inside eventlog.Log.Decide.
func (p *Identities) Decisions() *Identities { return &Identities{p.decisions()} }

// Skipped counts events of this model's types that could not be applied. It stays
// 0 on a chain written by civnode's commands; anything else is a bug to report.
func (p *Identities) Skipped() (uint64, error) { return skipped(p.src, key(identitySkipped)) }

// Key tags of the identities model.
const (
	identityRecord  = "i/r"
	identitySlug    = "i/s"
	identityOrder   = "i/o"
	identityRef     = "i/c"
	identityCount   = "i/n"
	identityTotals  = "i/t"
	identitySkipped = "i/k"
)

// Metric names of the identities model's counters.
const (
	metricIdentities = "identities"
	metricFaction    = "faction"
	metricRole       = "role"
	metricStrategy   = "strategy"
	metricHome       = "home"
	metricMember     = "member"
	metricBindings   = "bindings"
	metricActive     = "active"
	metricKind       = "kind"
	metricShared     = "shared"
)

// recentEvents is how many of an agent's latest events are remembered for the
// supervision home view.
const recentEvents = 20
