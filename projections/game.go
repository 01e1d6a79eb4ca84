package projections

import (
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Game answers the game layer's queries from the game read model: whether the
// starter set is installed and which mission packs are, each with the missions
// it published. The model folds game.starter_missions.installed and
// game.mission_pack.installed; other events leave it as it is. The missions
// themselves are the missions model's.
//
// Its state lives in the log's model space under these keys:
//
//	g/s                 the starter set's GameInstall (JSON)
//	g/p 0 <pack_id>     a mission pack's GameInstall
//	g/o 0 <seq>         pack_id, in install order
//	g/k                 events the model could not apply
type Game struct{ queries }

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

// Key tags of the game model.
const (
	gameStarter = "g/s"
	gamePack    = "g/p"
	gameOrder   = "g/o"
	gameSkipped = "g/k"
)

// NewGame returns the queries of the game model kept in src; they see durable
// state only.
func NewGame(src Source) *Game { return &Game{queries{src: src}} }

// Decisions returns the same model read at its newest state, sequenced events
// included: what commands consult inside eventlog.Log.Decide.
func (p *Game) Decisions() *Game { return &Game{p.decisions()} }

// Skipped counts game events that could not be applied. It stays 0 on a chain
// written by civnode's commands; anything else is a bug to report.
func (p *Game) Skipped() (uint64, error) { return skipped(p.src, key(gameSkipped)) }

// foldGame folds one event into the game model. A malformed installed event or
// a second install of the starter set or of one pack is refused.
func foldGame(w writer, ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeGameStarterMissionsInstalled:
		return applyStarter(w, ev)
	case events.TypeGameMissionPackInstalled:
		return applyPack(w, ev)
	default:
		return errNotOurs
	}
}

func applyStarter(w writer, ev *eventlog.Event) error {
	var pl events.StarterMissionsInstalled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if _, ok, err := w.Get(key(gameStarter)); err != nil {
		return storeErr(err)
	} else if ok {
		return errors.New("the starter set is installed already")
	}
	in, err := newInstall(ev, "", pl.CatalogVersion, pl.SubnetID, pl.InstalledBy, pl.TemplateIDs, pl.MissionIDs)
	if err != nil {
		return err
	}
	return store(w, key(gameStarter), in)
}

func applyPack(w writer, ev *eventlog.Event) error {
	var pl events.MissionPackInstalled
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.PackID == "" {
		return errors.New("no pack_id")
	}
	if _, ok, err := w.Get(key(gamePack, pl.PackID)); err != nil {
		return storeErr(err)
	} else if ok {
		return fmt.Errorf("mission pack %s is installed already", pl.PackID)
	}
	in, err := newInstall(ev, pl.PackID, pl.CatalogVersion, pl.SubnetID, pl.InstalledBy, pl.TemplateIDs, pl.MissionIDs)
	if err != nil {
		return err
	}
	w.SetIndex(seqKey(append(key(gameOrder), 0), ev.Seq), []byte(pl.PackID))
	return store(w, key(gamePack, pl.PackID), in)
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
		InstalledAt: ev.Timestamp, EventID: ev.ID, TemplateIDs: templateIDs, MissionIDs: missionIDs}, nil
}

// install loads the install under k.
func (p *Game) install(k []byte) (GameInstall, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return GameInstall{}, false, err
	}
	defer done()
	var in GameInstall
	ok, err := load(r, k, &in)
	return in, ok, err
}

// StarterInstalled reports whether the starter set is installed
// (commands.GameReader).
func (p *Game) StarterInstalled() (bool, error) {
	_, ok, err := p.install(key(gameStarter))
	return ok, err
}

// PackInstalled reports whether mission pack id is installed
// (commands.GameReader).
func (p *Game) PackInstalled(id string) (bool, error) {
	_, ok, err := p.install(key(gamePack, id))
	return ok, err
}

// Starter returns the starter set's installation.
func (p *Game) Starter() (GameInstall, bool, error) { return p.install(key(gameStarter)) }

// Pack returns the installation of mission pack id.
func (p *Game) Pack(id string) (GameInstall, bool, error) { return p.install(key(gamePack, id)) }

// Packs returns every installed pack, in install order.
func (p *Game) Packs() ([]GameInstall, error) {
	v, err := view(p.src)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	out := []GameInstall{}
	lo, hi := under(key(gameOrder))
	err = v.Scan(lo, hi, false, func(_, id []byte) (bool, error) {
		var in GameInstall
		if _, err := load(v, key(gamePack, string(id)), &in); err != nil {
			return false, err
		}
		out = append(out, in)
		return true, nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}
