package core

import (
	"fmt"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// Core is a node's wired centre. The queries (Identities, Missions, GameState)
// read durable state; the commands read the same models at their newest state
// (Decisions) inside eventlog.Log.Decide.
type Core struct {
	Log *eventlog.Log

	Identities *projections.Identities
	Missions   *projections.Missions
	GameState  *projections.Game
	// Receipts is the registry proxy's read model: receipts and payments.
	Receipts *projections.Servicenet
	// Feeds is the oracle's read model.
	Feeds *projections.Oracle

	Identity *commands.Identity
	Mission  *commands.Mission
	Game     *commands.Game
	Tokens   *commands.Tokens
	Oracle   *commands.Oracle
	// PaymentAccounts is nil without Config.Keys; Servicenet is nil without
	// Config.Registry and Config.Keys.
	PaymentAccounts *commands.PaymentAccounts
	Servicenet      *commands.Servicenet
}

// Compile-time proof that the models satisfy what commands declare.
var (
	_ commands.IdentityReader   = (*projections.Identities)(nil)
	_ commands.ControllerReader = (*projections.Identities)(nil)
	_ commands.PublicIDResolver = (*projections.Identities)(nil)
	_ commands.ProfileReader    = (*projections.Identities)(nil)
	_ commands.MissionReader    = (*projections.Missions)(nil)
	_ commands.GameReader       = (*projections.Game)(nil)
	_ commands.ServicenetReader = (*projections.Servicenet)(nil)
	_ commands.OracleReader     = (*projections.Oracle)(nil)
	_ commands.OracleIdentities = (*projections.Identities)(nil)
)

// Config is what the commands need beyond the log.
type Config struct {
	// Catalog is the game vocabulary the commands accept; nil: the built-in one.
	Catalog *catalog.Catalog
	// Governs are the subnets this node governs (serve --governs), whose ids
	// no identity may take as its slug. The HTTP server's Options.Governs must
	// be the same list.
	Governs []string
	// Keys keeps the payment accounts' keys (<data-dir>/wallets); nil: the
	// node has no payment accounts.
	Keys commands.Keystore
	// Registry is the agent registry the node proxies; nil: no proxy.
	Registry commands.Registry
	// NoState folds without the state map's changes (projections.Folder.State),
	// for a benchmark that prices them: a node always keeps them, and a log
	// opened one way and then the other rebuilds its models.
	NoState bool
}

// Open opens the log described by opts with the read models attached, which
// eventlog.Open brings up to the chain's tip (catching up or rebuilding as
// their stored watermark and version require), and builds the commands from
// cfg. The models are current when it returns, so a caller may serve at once.
func Open(opts eventlog.Options, cfg Config) (c *Core, err error) {
	cat := cfg.Catalog
	if cat == nil {
		cat = catalog.Default()
	}
	opts.Models = projections.Folder{State: !cfg.NoState}
	l, err := eventlog.Open(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	c = &Core{Log: l,
		Identities: projections.NewIdentities(l),
		Missions:   projections.NewMissions(l),
		GameState:  projections.NewGame(l),
		Receipts:   projections.NewServicenet(l),
		Feeds:      projections.NewOracle(l),
	}
	ids, missions, game := c.Identities.Decisions(), c.Missions.Decisions(), c.GameState.Decisions()
	c.Identity, err = commands.NewIdentity(commands.IdentityOptions{
		Log: l, NodeKey: opts.Key, Identities: ids, Controllers: ids, Catalog: cat, Governs: cfg.Governs,
	})
	if err != nil {
		return nil, fmt.Errorf("identity commands: %w", err)
	}
	c.Mission, err = commands.NewMission(commands.MissionOptions{
		Log: l, Missions: missions, Identities: ids, Profiles: ids, Catalog: cat,
	})
	if err != nil {
		return nil, fmt.Errorf("mission commands: %w", err)
	}
	c.Game, err = commands.NewGame(commands.GameOptions{Log: l, Mission: c.Mission, Game: game, Catalog: cat})
	if err != nil {
		return nil, fmt.Errorf("game commands: %w", err)
	}
	c.Tokens, err = commands.NewTokens(commands.TokensOptions{
		Store: l, Auditor: l, Identities: c.Identities, NodeDID: l.NodeDID(),
	})
	if err != nil {
		return nil, fmt.Errorf("token service: %w", err)
	}
	c.Oracle, err = commands.NewOracle(commands.OracleOptions{
		Log: l, NodeKey: opts.Key, Feeds: c.Feeds.Decisions(), Identities: ids, Auditor: l,
	})
	if err != nil {
		return nil, fmt.Errorf("oracle commands: %w", err)
	}
	if cfg.Keys != nil {
		c.PaymentAccounts, err = commands.NewPaymentAccounts(commands.PaymentAccountsOptions{Store: l, Auditor: l, Keys: cfg.Keys})
		if err != nil {
			return nil, err
		}
	}
	if cfg.Registry != nil && c.PaymentAccounts != nil {
		c.Servicenet, err = commands.NewServicenet(commands.ServicenetOptions{
			Log: l, Registry: cfg.Registry, Model: c.Receipts.Decisions(), Accounts: c.PaymentAccounts,
		})
		if err != nil {
			return nil, fmt.Errorf("servicenet commands: %w", err)
		}
	}
	return c, nil
}

// Skipped returns, by model name, the events the models could not apply
// (projections.Skipped). Every count stays 0 on a chain written by civnode's
// commands; anything else is a bug.
func (c *Core) Skipped() (map[string]uint64, error) { return projections.Skipped(c.Log) }

// Close closes the log.
func (c *Core) Close() error { return c.Log.Close() }
