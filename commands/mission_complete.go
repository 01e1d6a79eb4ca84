package commands

import (
	"context"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// CompleteMissionInput completes a mission
// (POST /v1/core/missions/{mission_id}/complete).
type CompleteMissionInput struct {
	// Result is free text or serialised JSON, 1..262144 bytes; the publisher
	// reads it before settling.
	Result *string `json:"result"`
}

// Complete stores the claimer's result and appends mission.completed. Only a
// token that acts for the claimer may complete (403 forbidden), and only a
// claimed mission (409 invalid_state; a mission nobody claimed has no claimer to
// act for, so it is 409 too).
func (c *Mission) Complete(ctx context.Context, a Actor, missionID string, in CompleteMissionInput) (MissionResult, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return MissionResult{}, err
	}
	switch {
	case in.Result == nil:
		return MissionResult{}, Missing("result")
	case *in.Result == "":
		return MissionResult{}, Invalid("result", "result must not be empty")
	case len(*in.Result) > maxResult:
		return MissionResult{}, Invalid("result", "result must be at most %d bytes", maxResult)
	}
	evs, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		m, err := c.mission(missionID)
		if err != nil {
			return nil, err
		}
		if m.State == events.StateCreated {
			return nil, invalidState("mission %s is not claimed; claim it first", m.MissionID)
		}
		id, ok, err := c.ids.IdentityByDID(m.ClaimerDID)
		if err != nil {
			return nil, err
		}
		if !ok || !a.ActsFor(c.log.NodeDID(), id) {
			return nil, Forbidden("forbidden", "only a token that acts for the claimer %s may complete this mission", m.Claimer)
		}
		if m.State != events.StateClaimed {
			return nil, invalidState("mission %s is %s; only a claimed mission can be completed", m.MissionID, m.State)
		}
		return []eventlog.Draft{{Type: events.TypeMissionCompleted, Payload: events.MissionCompleted{
			MissionID: m.MissionID, Claimer: m.Claimer, Result: *in.Result,
		}}}, nil
	})
	if err != nil {
		return MissionResult{}, err
	}
	return MissionResult{MissionID: missionID, Events: evs}, nil
}
