package projections

import (
	"sync"

	"github.com/civnode/civnode/eventlog/events"
)

// Missions is the read model of the mission lifecycle: every mission by id, an
// index per list filter, each agent's balance, each subnet's treasury and the
// settlements in time order. It folds mission.created, mission.accepted,
// mission.completed, mission.settled and the payment.settled of a settlement;
// other events leave it as it is.
//
// Like Identities, a node runs two: the read model follows durable events
// (eventlog.Options.OnCommit) and answers queries; the decision model
// (NewMissionDecisions) follows the sequencer (OnSequenced) and is what the
// mission commands consult inside eventlog.Log.Decide (MissionRef).
//
// Every list is in creation order, which is seq order, and every filter has its
// own index, so a filtered list walks the smallest index its filters name, never
// every mission.
type Missions struct {
	// decisions marks a decision model (NewMissionDecisions).
	decisions bool

	mu      sync.RWMutex
	seq     uint64 // the last event applied
	skipped uint64 // events of our types that could not be applied

	byID map[string]*mission
	all  missionIndex
	// One index per list filter, keyed by the filter's value.
	byState     map[string]*missionIndex
	bySubnet    map[string]*missionIndex
	byDomain    map[string]*missionIndex
	byRole      map[string]*missionIndex
	byPublisher map[string]*missionIndex
	// Per agent DID: missions it issued, missions it claimed, and the subset of
	// both that is not settled yet (supervision home).
	byIssuer  map[string]*missionIndex
	byClaimer map[string]*missionIndex
	active    map[string]*missionIndex

	balances    map[string]*Stats // agent DID → what settlements paid it
	treasuries  map[string]int64  // subnet id → treasury credits
	settlements []settlement      // in chain order, for time windows
	paid        events.Reward     // every settlement's reward, summed
}

// mission is the state of one mission.
type mission struct {
	seq uint64 // of mission.created: the creation order
	events.MissionCreated
	state       string
	claimer     *string
	claimerDID  string
	result      *string
	settledBy   string
	paid        bool
	createdAt   string
	updatedAt   string
	claimedAt   *string
	completedAt *string
	settledAt   *string
	eventIDs    []string // every event about the mission, in chain order
}

// settlement is one paid mission, with running totals up to and including it.
type settlement struct {
	micros int64 // the payment's timestamp
	total  events.Reward
	count  int
}

// NewMissions returns an empty model.
func NewMissions() *Missions {
	p := &Missions{}
	p.reset()
	return p
}

// NewMissionDecisions returns an empty decision model: it folds the same events
// by the same rules as NewMissions, and so accepts and refuses (Skipped) exactly
// the same events, but keeps only what the commands read (MissionRef, and the
// balances and treasuries). It keeps no lists, texts, payloads, results or event
// ids, so its queries other than MissionRef, Balance, Treasury and Treasuries
// answer as if there were no missions. It runs on the sequencer, the log's one
// serial step, where that saving is worth having.
func NewMissionDecisions() *Missions {
	p := &Missions{decisions: true}
	p.reset()
	return p
}

// Reset discards every state, as before the first event.
func (p *Missions) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reset()
}

func (p *Missions) reset() {
	p.seq, p.skipped = 0, 0
	p.byID = map[string]*mission{}
	p.all = missionIndex{}
	p.byState = map[string]*missionIndex{}
	p.bySubnet = map[string]*missionIndex{}
	p.byDomain = map[string]*missionIndex{}
	p.byRole = map[string]*missionIndex{}
	p.byPublisher = map[string]*missionIndex{}
	p.byIssuer = map[string]*missionIndex{}
	p.byClaimer = map[string]*missionIndex{}
	p.active = map[string]*missionIndex{}
	p.balances = map[string]*Stats{}
	p.treasuries = map[string]int64{}
	p.settlements = nil
	p.paid = events.Reward{}
}

// Seq is the seq of the last event applied.
func (p *Missions) Seq() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.seq
}

// Skipped counts mission events that could not be applied. It stays 0 on a chain
// written by civnode's commands; anything else is a bug to report.
func (p *Missions) Skipped() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.skipped
}
