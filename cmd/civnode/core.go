package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// core is a node's wired centre: the event log, the read models that queries use
// (fed after each durable commit), the decision models that commands check rules
// against (fed as soon as an event is sequenced, so racing commands see each other),
// and the commands over them. serve, replay and the offline token commands all open
// a node through openCore, so they fold the chain the same way.
type core struct {
	chain *eventlog.Log

	identities        *projections.Identities // read model
	identityDecisions *projections.Identities // decision model
	missions          *projections.Missions   // read model
	missionDecisions  *projections.Missions   // decision model
	gameState         *projections.Game       // read model
	gameDecisions     *projections.Game       // decision model

	identity *commands.Identity
	mission  *commands.Mission
	game     *commands.Game
	tokens   *commands.Tokens
}

// Compile-time proof that the read models satisfy what commands declare.
var (
	_ commands.IdentityReader   = (*projections.Identities)(nil)
	_ commands.ControllerReader = (*projections.Identities)(nil)
	_ commands.PublicIDResolver = (*projections.Identities)(nil)
	_ commands.ProfileReader    = (*projections.Identities)(nil)
	_ commands.MissionReader    = (*projections.Missions)(nil)
	_ commands.GameReader       = (*projections.Game)(nil)
)

// openCore opens the log with every model attached, rebuilds the models from the
// chain and builds the commands, which accept the vocabulary of cat. The models
// are complete before it returns, so a caller may serve at once.
func openCore(ctx context.Context, d dataDir, key ed25519.PrivateKey, cat *catalog.Catalog, logger *slog.Logger) (c *core, err error) {
	c = &core{
		identities:        projections.NewIdentities(),
		identityDecisions: projections.NewIdentities(),
		missions:          projections.NewMissions(),
		missionDecisions:  projections.NewMissionDecisions(),
		gameState:         projections.NewGame(),
		gameDecisions:     projections.NewGame(),
	}
	c.chain, err = openLog(d, key, logger, eventlog.Options{
		OnCommit: func(evs []eventlog.Event) {
			c.identities.ApplyEvents(evs)
			c.missions.ApplyEvents(evs)
			c.gameState.ApplyEvents(evs)
		},
		OnSequenced: func(evs []eventlog.Event) {
			c.identityDecisions.ApplyEvents(evs)
			c.missionDecisions.ApplyEvents(evs)
			c.gameDecisions.ApplyEvents(evs)
		},
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.chain.Close()
		}
	}()
	// Genesis and every event of earlier runs reach the models only through this
	// rebuild; nothing is appended until it is done.
	if err := projections.Rebuild(ctx, c.chain, c.identities, c.identityDecisions, c.missions, c.missionDecisions,
		c.gameState, c.gameDecisions); err != nil {
		return nil, fmt.Errorf("rebuild read models: %w", err)
	}
	if n := c.identities.Skipped(); n > 0 {
		logger.Warn("identity events the read model could not apply", "count", n)
	}
	if n := c.missions.Skipped(); n > 0 {
		logger.Warn("mission events the read model could not apply", "count", n)
	}
	if n := c.gameState.Skipped(); n > 0 {
		logger.Warn("game events the read model could not apply", "count", n)
	}
	c.identity, err = commands.NewIdentity(commands.IdentityOptions{
		Log: c.chain, NodeKey: key, Identities: c.identityDecisions, Controllers: c.identityDecisions,
		Catalog: cat,
	})
	if err != nil {
		return nil, fmt.Errorf("identity commands: %w", err)
	}
	c.mission, err = commands.NewMission(commands.MissionOptions{
		Log: c.chain, Missions: c.missionDecisions, Identities: c.identityDecisions, Profiles: c.identityDecisions,
		Catalog: cat,
	})
	if err != nil {
		return nil, fmt.Errorf("mission commands: %w", err)
	}
	c.game, err = commands.NewGame(commands.GameOptions{
		Log: c.chain, Mission: c.mission, Game: c.gameDecisions, Catalog: cat,
	})
	if err != nil {
		return nil, fmt.Errorf("game commands: %w", err)
	}
	c.tokens, err = commands.NewTokens(commands.TokensOptions{
		Store: c.chain, Auditor: c.chain, Identities: c.identities, NodeDID: c.chain.NodeDID(),
	})
	if err != nil {
		return nil, fmt.Errorf("token service: %w", err)
	}
	return c, nil
}

// openCore opens an existing node's core for a one-shot command; it creates
// nothing (see openChain).
func (d dataDir) openCore(ctx context.Context, logger *slog.Logger) (*core, error) {
	key, err := d.existingNodeKey(logger)
	if err != nil {
		return nil, err
	}
	// One-shot commands decide nothing a catalog governs; the built-in one will do.
	return openCore(ctx, d, key, catalog.Default(), logger)
}

func (c *core) Close() error { return c.chain.Close() }
