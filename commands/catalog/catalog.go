package catalog

import (
	"encoding/json"
	"slices"
	"strings"
)

// Catalog is one validated game catalog. Only Parse makes a valid one, and the
// catalog is shared by every command and handler of a node, so callers treat it as
// read-only: nothing may modify a Catalog or the slices it holds.
//
// Its JSON encoding is the catalog file format, so what GET /v1/game/catalog
// serves is itself a valid --catalog file.
type Catalog struct {
	// Version names this revision of the content, such as "2026.11.1".
	Version string `json:"version"`
	// Stages are the steps of an agent's progress, in order.
	Stages           []Entry           `json:"stages"`
	Roles            []Role            `json:"roles"`
	Factions         []Entry           `json:"factions"`
	Strategies       []Entry           `json:"strategies"`
	Domains          []Entry           `json:"domains"`
	MissionTemplates []MissionTemplate `json:"mission_templates"`
	MissionPacks     []MissionPack     `json:"mission_packs"`
	// StarterMissions are the ids of the templates in the starter set, in the
	// order a new agent is shown them.
	StarterMissions []string `json:"starter_missions"`
}

// Entry is a named thing of the catalog: a stage, faction, strategy or domain.
type Entry struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Role is a role an agent may hold. FocusDomains are the domains whose missions
// the role is meant for.
type Role struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	FocusDomains []string `json:"focus_domains"`
}

// MissionTemplate is a mission the game can publish: everything of a mission but
// the publisher and subnet, which the node supplies.
type MissionTemplate struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Domain      string `json:"domain"`
	// RequiredRole and RequiredFaction restrict who may claim; nil means anyone.
	RequiredRole    *string `json:"required_role"`
	RequiredFaction *string `json:"required_faction"`
	Reward          Reward  `json:"reward"`
	// Payload is a JSON object forwarded to the claimer; {} when the file has none.
	Payload json.RawMessage `json:"payload"`
	// Sets are the sets the template belongs to: SetStarter and PackSet(id).
	Sets []string `json:"sets"`
}

// Reward is a mission's reward (docs/api.md, "Missions"); every field is an
// integer from 0 to MaxReward.
type Reward struct {
	AgentCredit         int64 `json:"agent_credit"`
	Reputation          int64 `json:"reputation"`
	Capacity            int64 `json:"capacity"`
	TreasuryShareCredit int64 `json:"treasury_share_credit"`
}

// MissionPack is a named set of templates installed together. Exactly one pack
// of a catalog is the default.
type MissionPack struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Default     bool   `json:"default"`
}

// SetStarter is the set of the starter missions.
const SetStarter = "starter"

// packSetPrefix starts the set name of a mission pack.
const packSetPrefix = "pack:"

// PackSet is the set name of mission pack id, as templates list it in Sets.
func PackSet(id string) string { return packSetPrefix + id }

// packOfSet returns the pack id of a pack set name.
func packOfSet(set string) (string, bool) { return strings.CutPrefix(set, packSetPrefix) }

// FactionIDs are the accepted values of a profile's faction.
func (c *Catalog) FactionIDs() []string { return entryIDs(c.Factions) }

// StrategyIDs are the accepted values of a profile's strategy.
func (c *Catalog) StrategyIDs() []string { return entryIDs(c.Strategies) }

// DomainIDs are the mission domains.
func (c *Catalog) DomainIDs() []string { return entryIDs(c.Domains) }

// StageIDs are the stages, in order.
func (c *Catalog) StageIDs() []string { return entryIDs(c.Stages) }

// RoleIDs are the accepted values of a profile's role and of a mission's
// required_role.
func (c *Catalog) RoleIDs() []string {
	ids := make([]string, len(c.Roles))
	for i, r := range c.Roles {
		ids[i] = r.ID
	}
	return ids
}

// Template returns the mission template with id.
func (c *Catalog) Template(id string) (MissionTemplate, bool) {
	i := slices.IndexFunc(c.MissionTemplates, func(t MissionTemplate) bool { return t.ID == id })
	if i < 0 {
		return MissionTemplate{}, false
	}
	return c.MissionTemplates[i], true
}

// Starter returns the templates of the starter set in StarterMissions order.
func (c *Catalog) Starter() []MissionTemplate {
	out := make([]MissionTemplate, 0, len(c.StarterMissions))
	for _, id := range c.StarterMissions {
		if t, ok := c.Template(id); ok {
			out = append(out, t)
		}
	}
	return out
}

// Pack returns the mission pack with id.
func (c *Catalog) Pack(id string) (MissionPack, bool) {
	i := slices.IndexFunc(c.MissionPacks, func(p MissionPack) bool { return p.ID == id })
	if i < 0 {
		return MissionPack{}, false
	}
	return c.MissionPacks[i], true
}

// DefaultPack returns the default mission pack; a parsed catalog has exactly one.
func (c *Catalog) DefaultPack() MissionPack {
	i := slices.IndexFunc(c.MissionPacks, func(p MissionPack) bool { return p.Default })
	if i < 0 {
		return MissionPack{}
	}
	return c.MissionPacks[i]
}

// PackTemplates returns the templates of mission pack id in catalog order.
func (c *Catalog) PackTemplates(id string) []MissionTemplate {
	set := PackSet(id)
	var out []MissionTemplate
	for _, t := range c.MissionTemplates {
		if slices.Contains(t.Sets, set) {
			out = append(out, t)
		}
	}
	return out
}

func entryIDs(es []Entry) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}
