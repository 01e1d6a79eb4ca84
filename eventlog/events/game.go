package events

// Event types of the game layer (docs/events.md). Each records that a set of the
// catalog's mission templates was published as missions; the mission.created
// events of the set precede it in the same append, so the chain never holds an
// installed set whose missions are missing, nor a set's missions without the
// record that makes a repeat install a no-op.
const (
	// TypeGameStarterMissionsInstalled records the starter set's installation.
	// A node installs the starter set at most once.
	TypeGameStarterMissionsInstalled = "game.starter_missions.installed"
	// TypeGameMissionPackInstalled records a mission pack's installation. A node
	// installs each pack (by pack_id) at most once.
	TypeGameMissionPackInstalled = "game.mission_pack.installed"
)

// StarterMissionsInstalled is the payload of game.starter_missions.installed.
type StarterMissionsInstalled struct {
	// CatalogVersion is the version of the catalog the templates came from.
	CatalogVersion string `json:"catalog_version"`
	// SubnetID is the governed subnet that published the missions, as
	// planetary_government; it is their publisher and subnet_id.
	SubnetID string `json:"subnet_id"`
	// TemplateIDs are the templates published, in starter order, and
	// MissionIDs the missions published from them, index for index.
	TemplateIDs []string `json:"template_ids"`
	MissionIDs  []string `json:"mission_ids"`
	// InstalledBy is the DID the installing token acted for: the node DID.
	InstalledBy string `json:"installed_by"`
}

// MissionPackInstalled is the payload of game.mission_pack.installed: as
// StarterMissionsInstalled, for the templates of mission pack PackID in catalog
// order.
type MissionPackInstalled struct {
	CatalogVersion string   `json:"catalog_version"`
	PackID         string   `json:"pack_id"`
	SubnetID       string   `json:"subnet_id"`
	TemplateIDs    []string `json:"template_ids"`
	MissionIDs     []string `json:"mission_ids"`
	InstalledBy    string   `json:"installed_by"`
}
