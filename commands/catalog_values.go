package commands

// The accepted values of profile fields. The spec names these as examples of what
// the game catalog defines; until the catalog exists (game-catalog issue) this is
// the one place they live. That issue replaces these lists with values read from
// the catalog; nothing else in the package names a faction, role or strategy.
var (
	// Factions an agent may belong to.
	Factions = []string{"freeport", "order", "frontier"}
	// Roles an agent may hold; missions require one (required_role).
	Roles = []string{"broker", "operator", "enforcer", "archivist"}
	// Strategies are hints to the runtime scheduler.
	Strategies = []string{"balanced", "aggressive", "cautious", "cooperative"}
)
