package commands

import "github.com/civnode/civnode/commands/catalog"

// The default vocabulary: the accepted values of profile fields and mission
// requirements in the catalog built into the binary (catalog.Default). A node run
// with its own catalog (serve --catalog) accepts that catalog's values instead,
// through the Catalog field of the command options; these lists serve commands
// built without one, and callers that only need the built-in values.
var (
	// Factions an agent may belong to.
	Factions = catalog.Default().FactionIDs()
	// Roles an agent may hold; missions require one (required_role).
	Roles = catalog.Default().RoleIDs()
	// Strategies are hints to the runtime scheduler.
	Strategies = catalog.Default().StrategyIDs()
)
