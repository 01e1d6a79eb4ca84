package commands

import (
	"errors"

	"github.com/google/uuid"

	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// MissionReader finds missions and what their settlements have paid. Mission
// commands read it only inside eventlog.Log.Decide, so it must be a decision
// model: a projection fed by eventlog.Options.OnSequenced, which has seen every
// decision made before.
type MissionReader interface {
	MissionRef(missionID string) (events.MissionRef, bool, error)
	// PaidTotal is what every settlement so far has paid, summed: the totals
	// that settlements are bounded by (MaxBalance).
	PaidTotal() (events.Reward, error)
}

// ProfileReader finds an identity's profile, for the eligibility rules of a
// claim. Like MissionReader it must be a decision model.
type ProfileReader interface {
	IdentityProfile(agentDID string) (events.ProfileUpdated, bool, error)
}

// MissionOptions configures NewMission. Every field but NewID and Catalog is
// required.
type MissionOptions struct {
	// Log is the chain the commands append to.
	Log *eventlog.Log
	// Missions is the missions decision model (a *projections.Missions fed by
	// OnSequenced); Identities and Profiles the identities decision model (a
	// *projections.Identities fed by OnSequenced).
	Missions   MissionReader
	Identities IdentityReader
	Profiles   ProfileReader
	// NewID returns a fresh mission id; default a UUIDv7.
	NewID func() (string, error)
	// Catalog supplies the accepted values of required_role and
	// required_faction; default catalog.Default().
	Catalog *catalog.Catalog
}

// Mission runs the mission lifecycle: create, claim, complete and settle
// (docs/api.md). Each decides its events on the log's sequencer
// (eventlog.Log.Decide) against the decision models, so every rule is checked
// against every decision before it: of sixteen concurrent claims of one mission
// exactly one wins, and a mission is settled and paid at most once. Durability
// stays batched: a decision holds no lock across the fsync.
//
// Authority over a mission follows the DID its publisher acted as (issuer_did),
// never the publisher string, which a rename could later give to another
// identity.
type Mission struct {
	log      *eventlog.Log
	missions MissionReader
	ids      IdentityReader
	profiles ProfileReader
	newID    func() (string, error)
	roles    []string
	factions []string
}

// NewMission checks opts and returns the command set.
func NewMission(opts MissionOptions) (*Mission, error) {
	switch {
	case opts.Log == nil:
		return nil, errors.New("mission commands: Log is nil")
	case opts.Missions == nil || opts.Identities == nil || opts.Profiles == nil:
		return nil, errors.New("mission commands: a decision model is missing")
	}
	if opts.NewID == nil {
		opts.NewID = newMissionID
	}
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	return &Mission{log: opts.Log, missions: opts.Missions, ids: opts.Identities,
		profiles: opts.Profiles, newID: opts.NewID,
		roles: opts.Catalog.RoleIDs(), factions: opts.Catalog.FactionIDs()}, nil
}

// Roles are the accepted values of required_role; Factions of required_faction.
// The callers must not modify them.
func (c *Mission) Roles() []string    { return c.roles }
func (c *Mission) Factions() []string { return c.factions }

func newMissionID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// MissionResult is what a mission command decided.
type MissionResult struct {
	MissionID string
	// Events are the durable events appended: mission.created, mission.accepted,
	// mission.completed, or mission.settled and payment.settled.
	Events []eventlog.Event
}

// mission finds missionID in the decision model: 404 mission_not_found.
func (c *Mission) mission(missionID string) (events.MissionRef, error) {
	m, ok, err := c.missions.MissionRef(missionID)
	if err != nil {
		return events.MissionRef{}, err
	}
	if !ok {
		return events.MissionRef{}, NotFound("mission_not_found", "", "no mission has mission_id %s", missionID)
	}
	return m, nil
}

// forbiddenField is a 403 forbidden blaming one input field.
func forbiddenField(field, format string, args ...any) *Error {
	e := Forbidden("forbidden", format, args...)
	e.Field = field
	return e
}

// notEligible is the 403 of a claimer that may not hold this mission.
func notEligible(format string, args ...any) *Error {
	e := Forbidden("not_eligible", format, args...)
	e.Field = "claimer"
	return e
}

// invalidState is the 409 of a transition the state machine does not allow now.
func invalidState(format string, args ...any) *Error {
	return Conflict("invalid_state", "", format, args...)
}
