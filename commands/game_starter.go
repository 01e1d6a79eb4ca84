package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog/events"
)

// InstallStarterMissions publishes the catalog's starter set, one mission per
// template in starter order, and appends game.starter_missions.installed after
// them. A node installs the starter set once: a repeat publishes nothing and
// reports Published false. Refusals are those of install.
func (g *Game) InstallStarterMissions(ctx context.Context, a Actor, _ InstallInput) (InstallResult, error) {
	return g.install(ctx, a, gameSet{
		name:      "starter missions",
		templates: g.catalog.Starter(),
		installed: g.game.StarterInstalled,
		typ:       events.TypeGameStarterMissionsInstalled,
		record: func(subnet, by string, templateIDs, missionIDs []string) any {
			return events.StarterMissionsInstalled{CatalogVersion: g.catalog.Version, SubnetID: subnet,
				TemplateIDs: templateIDs, MissionIDs: missionIDs, InstalledBy: by}
		},
	})
}
