package commands

import (
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// missionDraft is a mission about to be published: the one path from a
// CreateMissionInput to a mission.created, shared by POST /v1/core/missions and
// the game's installs so that both apply the same rules and write the same
// event.
//
// newMissionDraft does the work that needs no decision on the caller's
// goroutine: it validates the input, gives the mission its id and encodes the
// payload for the issuer the publisher resolves to now. draft runs inside a
// decision, on the log's serial goroutine, and only confirms that the actor
// still acts for the publisher and that the id is free.
type missionDraft struct {
	c        *Mission
	a        Actor
	pl       events.MissionCreated
	expected string             // the issuer resolved before the decision; "" if none
	encoded  eventlog.Canonical // pl for expected, when there is one
}

// newMissionDraft validates in for a and prepares its mission.created.
func (c *Mission) newMissionDraft(a Actor, in CreateMissionInput) (*missionDraft, error) {
	pl, err := in.check(c.roles, c.factions)
	if err != nil {
		return nil, err
	}
	if pl.MissionID, err = c.newID(); err != nil {
		return nil, fmt.Errorf("new mission id: %w", err)
	}
	d := &missionDraft{c: c, a: a, pl: pl}
	// A refusal is reported by draft, against the state the decision sees.
	d.expected, _ = c.issuer(a, pl.Publisher, pl.PublisherKind)
	if d.expected != "" {
		pl.IssuerDID = d.expected
		if d.encoded, err = eventlog.Canonicalize(pl); err != nil {
			return nil, fmt.Errorf("encode mission.created: %w", err)
		}
	}
	return d, nil
}

// MissionID is the id the mission will have.
func (d *missionDraft) MissionID() string { return d.pl.MissionID }

// draft checks the publisher's authority and returns the mission.created to
// append. It must run inside a decision (eventlog.Log.Decide).
func (d *missionDraft) draft() (eventlog.Draft, error) {
	issuer, err := d.c.issuer(d.a, d.pl.Publisher, d.pl.PublisherKind)
	if err != nil {
		return eventlog.Draft{}, err
	}
	if _, taken, err := d.c.missions.MissionRef(d.pl.MissionID); err != nil {
		return eventlog.Draft{}, err
	} else if taken {
		return eventlog.Draft{}, fmt.Errorf("new mission id %s exists; check the id source", d.pl.MissionID)
	}
	pl := d.pl
	pl.IssuerDID = issuer
	if issuer == d.expected {
		return eventlog.Draft{Type: events.TypeMissionCreated, Payload: d.encoded, Decoded: pl}, nil
	}
	return eventlog.Draft{Type: events.TypeMissionCreated, Payload: pl, Decoded: pl}, nil
}
