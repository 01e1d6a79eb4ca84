package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog/events"
)

// InstallMissionPack publishes the catalog's default mission pack, one mission
// per template in catalog order, and appends game.mission_pack.installed after
// them. A node installs each pack (by id) once: a repeat publishes nothing and
// reports Published false. Refusals are those of install.
func (g *Game) InstallMissionPack(ctx context.Context, a Actor, _ InstallInput) (InstallResult, error) {
	pack := g.catalog.DefaultPack()
	return g.install(ctx, a, gameSet{
		name:      "mission pack " + pack.ID,
		templates: g.catalog.PackTemplates(pack.ID),
		installed: func() (bool, error) { return g.game.PackInstalled(pack.ID) },
		typ:       events.TypeGameMissionPackInstalled,
		record: func(subnet, by string, templateIDs, missionIDs []string) any {
			return events.MissionPackInstalled{CatalogVersion: g.catalog.Version, PackID: pack.ID, SubnetID: subnet,
				TemplateIDs: templateIDs, MissionIDs: missionIDs, InstalledBy: by}
		},
	})
}
