package commands

import (
	"errors"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
)

// GameReader tells which of the game's sets a node has installed. Game commands
// read it only inside eventlog.Log.Decide, so it must be a decision model: a
// projection fed by eventlog.Options.OnSequenced, which has seen every decision
// made before.
type GameReader interface {
	StarterInstalled() (bool, error)
	PackInstalled(packID string) (bool, error)
}

// GameOptions configures NewGame. Log, Mission and Game are required.
type GameOptions struct {
	// Log is the chain the commands append to.
	Log *eventlog.Log
	// Mission is the node's mission commands: the game publishes its missions
	// through their rules.
	Mission *Mission
	// Game is the game decision model (a *projections.Game fed by OnSequenced).
	Game GameReader
	// Catalog supplies the templates of the starter set and the mission packs;
	// default catalog.Default(). It must be the catalog Mission accepts roles
	// and factions from.
	Catalog *catalog.Catalog
}

// Game installs the game's mission sets: the catalog's starter set and its
// default mission pack. An install publishes one mission per template, through
// the same rules and as the same mission.created events as
// POST /v1/core/missions, and records the set as installed, all in one decision
// (eventlog.Log.Decide) and one append. Because the decision checks the
// installed record first, an install happens at most once per node whatever
// the number of concurrent callers, and a repeat, also after a restart,
// publishes nothing.
type Game struct {
	log     *eventlog.Log
	mission *Mission
	game    GameReader
	catalog *catalog.Catalog
}

// NewGame checks opts and returns the command set.
func NewGame(opts GameOptions) (*Game, error) {
	switch {
	case opts.Log == nil:
		return nil, errors.New("game commands: Log is nil")
	case opts.Mission == nil:
		return nil, errors.New("game commands: Mission is nil")
	case opts.Game == nil:
		return nil, errors.New("game commands: the decision model is missing")
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	return &Game{log: opts.Log, mission: opts.Mission, game: opts.Game, catalog: opts.Catalog}, nil
}

// Catalog is the catalog the commands install from.
func (g *Game) Catalog() *catalog.Catalog { return g.catalog }
