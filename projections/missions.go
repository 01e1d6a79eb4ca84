package projections

// Missions answers the mission queries from the missions read model: every
// mission by id, an index per list filter, each agent's balance, each subnet's
// treasury and the settlements in time order. The model folds mission.created,
// mission.accepted, mission.completed, mission.settled and the payment.settled
// of a settlement (missions_apply.go); other events leave it as it is.
//
// Its state lives in the log's model space under these keys (0x00 separates
// the parts of a key, and a seq is 8 bytes big-endian):
//
//	m/r 0 <mission_id>                 the mission (missionState, JSON)
//	m/t 0 <mission_id>                 its result, once completed
//	m/i 0 <index> 0 <value> 0 <seq>    mission_id, one entry per index the
//	                                   mission is in: all, state, subnet,
//	                                   domain, role, publisher, issuer,
//	                                   claimer, active
//	m/n 0 <index> 0 <value>            how many missions that index holds
//	m/b 0 <agent_did>                  what settlements paid the agent (Stats)
//	m/y 0 <subnet_id>                  the subnet's treasury credits
//	m/s 0 <payment µs>                 running totals of every settlement up to
//	                                   and including this one
//	m/p                                the running totals of the newest one
//	m/k                                events the model could not apply
//	m/h                                the greatest mission_id created: no
//	                                   m/r key sorts after it, so a new id
//	                                   above it needs no lookup (newMission)
//
// Every list is in creation order, which is seq order, and every filter has its
// own index, so a filtered list walks the smallest index its filters name.
type Missions struct{ queries }

// NewMissions returns the queries of the missions model kept in src; they see
// durable state only.
func NewMissions(src Source) *Missions { return &Missions{queries{src: src}} }

// Decisions returns the same model read at its newest state, sequenced events
// included: what commands consult inside eventlog.Log.Decide.
func (p *Missions) Decisions() *Missions { return &Missions{p.decisions()} }

// Skipped counts mission events that could not be applied. It stays 0 on a chain
// written by civnode's commands; anything else is a bug to report.
func (p *Missions) Skipped() (uint64, error) { return skipped(p.src, key(missionSkipped)) }

// Key tags of the missions model.
const (
	missionRecord   = "m/r"
	missionResult   = "m/t"
	missionIndex    = "m/i"
	missionCount    = "m/n"
	missionBalance  = "m/b"
	missionTreasury = "m/y"
	missionSettle   = "m/s"
	missionPaid     = "m/p"
	missionSkipped  = "m/k"
	missionHighest  = "m/h"
)

// Mission indexes.
const (
	indexAll       = "all"
	indexState     = "state"
	indexSubnet    = "subnet"
	indexDomain    = "domain"
	indexRole      = "role"
	indexPublisher = "publisher"
	indexIssuer    = "issuer"
	indexClaimer   = "claimer"
	indexActive    = "active"
)

// counted are the indexes whose sizes are kept: those a list filter names.
var counted = map[string]bool{indexAll: true, indexState: true, indexSubnet: true, indexDomain: true,
	indexRole: true, indexPublisher: true}
