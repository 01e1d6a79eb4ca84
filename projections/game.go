package projections

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Game is the read model of the game layer: whether the starter set is
// installed and which mission packs are, each with the missions it published.
// It folds game.starter_missions.installed and game.mission_pack.installed;
// other events leave it as it is. The missions themselves are the missions
// model's.
//
// Like the other models a node runs two: the read model follows durable events
// (eventlog.Options.OnCommit) and answers queries; the decision model follows
// the sequencer (OnSequenced) and is what the game commands consult inside
// eventlog.Log.Decide (StarterInstalled, PackInstalled). Both are NewGame: the
// model is small enough that the decision side needs no leaner variant.
type Game struct {
	mu      sync.RWMutex
	seq     uint64 // the last event applied
	skipped uint64 // events of our types that could not be applied

	starter *GameInstall
	packs   []*GameInstall // in install order
}

// GameInstall is one installed set, as its installed event recorded it.
type GameInstall struct {
	// PackID is the mission pack's id; "" for the starter set.
	PackID string
	// CatalogVersion is the version of the catalog the templates came from.
	CatalogVersion string
	// SubnetID is the subnet that published the missions.
	SubnetID string
	// InstalledBy is the DID the installing token acted for.
	InstalledBy string
	// InstalledAt is the installed event's timestamp and EventID its id.
	InstalledAt string
	EventID     string
	// TemplateIDs and MissionIDs pair each template with its mission, in the
	// set's order.
	TemplateIDs []string
	MissionIDs  []string
}

// NewGame returns an empty model.
func NewGame() *Game { return &Game{} }

// Reset discards every state, as before the first event.
func (p *Game) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq, p.skipped, p.starter, p.packs = 0, 0, nil, nil
}

// Seq is the seq of the last event applied.
func (p *Game) Seq() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.seq
}

// Skipped counts game events that could not be applied. It stays 0 on a chain
// written by civnode's commands; anything else is a bug to report.
func (p *Game) Skipped() uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.skipped
}

// ApplyEvents applies events in order. Its signature fits eventlog.Options.OnCommit
// and OnSequenced. Events that cannot be applied are counted in Skipped.
func (p *Game) ApplyEvents(evs []eventlog.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range evs {
		p.apply(&evs[i])
	}
}

// Apply folds one event into the model. It is deterministic, ignores events at
// or below the last seq applied, and refuses (changes nothing, counts in
// Skipped, returns an error) a malformed installed event or a second install
// of the starter set or of one pack; the chain holds no such event when only
// civnode's commands wrote it.
func (p *Game) Apply(ev eventlog.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.apply(&ev)
}

func (p *Game) apply(ev *eventlog.Event) error {
	return fold(ev, &p.seq, &p.skipped, p.handle)
}

// handle folds one event of this model's types.
func (p *Game) handle(ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeGameStarterMissionsInstalled:
		return p.applyStarter(ev)
	case events.TypeGameMissionPackInstalled:
		return p.applyPack(ev)
	default:
		return errNotOurs
	}
}

func (p *Game) applyStarter(ev *eventlog.Event) error {
	var pl events.StarterMissionsInstalled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if p.starter != nil {
		return errors.New("the starter set is installed already")
	}
	in, err := newInstall(ev, "", pl.CatalogVersion, pl.SubnetID, pl.InstalledBy, pl.TemplateIDs, pl.MissionIDs)
	if err != nil {
		return err
	}
	p.starter = in
	return nil
}

func (p *Game) applyPack(ev *eventlog.Event) error {
	var pl events.MissionPackInstalled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.PackID == "" {
		return errors.New("no pack_id")
	}
	if p.pack(pl.PackID) != nil {
		return fmt.Errorf("mission pack %s is installed already", pl.PackID)
	}
	in, err := newInstall(ev, pl.PackID, pl.CatalogVersion, pl.SubnetID, pl.InstalledBy, pl.TemplateIDs, pl.MissionIDs)
	if err != nil {
		return err
	}
	p.packs = append(p.packs, in)
	return nil
}

func newInstall(ev *eventlog.Event, packID, version, subnet, by string, templateIDs, missionIDs []string) (*GameInstall, error) {
	switch {
	case len(missionIDs) == 0:
		return nil, errors.New("no missions")
	case len(templateIDs) != len(missionIDs):
		return nil, fmt.Errorf("%d template_ids for %d mission_ids", len(templateIDs), len(missionIDs))
	case subnet == "":
		return nil, errors.New("no subnet_id")
	}
	return &GameInstall{PackID: packID, CatalogVersion: version, SubnetID: subnet, InstalledBy: by,
		InstalledAt: ev.Timestamp, EventID: ev.ID,
		TemplateIDs: slices.Clone(templateIDs), MissionIDs: slices.Clone(missionIDs)}, nil
}

// pack returns the installed pack id; nil if none. The caller holds the lock.
func (p *Game) pack(id string) *GameInstall {
	for _, in := range p.packs {
		if in.PackID == id {
			return in
		}
	}
	return nil
}

// StarterInstalled reports whether the starter set is installed
// (commands.GameReader).
func (p *Game) StarterInstalled() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.starter != nil
}

// PackInstalled reports whether mission pack id is installed
// (commands.GameReader).
func (p *Game) PackInstalled(id string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.pack(id) != nil
}

// Starter returns the starter set's installation.
func (p *Game) Starter() (GameInstall, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.starter == nil {
		return GameInstall{}, false
	}
	return p.starter.clone(), true
}

// Pack returns the installation of mission pack id.
func (p *Game) Pack(id string) (GameInstall, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	in := p.pack(id)
	if in == nil {
		return GameInstall{}, false
	}
	return in.clone(), true
}

// Packs returns every installed pack, in install order.
func (p *Game) Packs() []GameInstall {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]GameInstall, len(p.packs))
	for i, in := range p.packs {
		out[i] = in.clone()
	}
	return out
}

func (in *GameInstall) clone() GameInstall {
	c := *in
	c.TemplateIDs, c.MissionIDs = slices.Clone(in.TemplateIDs), slices.Clone(in.MissionIDs)
	return c
}
