package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// The mission endpoints (docs/api.md, "Missions"). Writes go through
// commands.Mission, which appends before it returns; every write answers with the
// full mission record its own event's fold produced (writtenMission), which is
// durable with the event, so a 200 is durable and every later read sees it. Who may act for
// whom is the commands' to decide; the route table keeps observers out and the
// supervision list to the owner.
//
// httprouter does not let a static segment and a parameter share a position, so
// GET /v1/core/missions/my is the one route GET /v1/core/missions/:mission_id
// with the id "my", which no mission has (mission ids are UUIDs).

// missionRoutes registers the mission endpoints, when the server has the mission
// commands and read model.
func (s *Server) missionRoutes() {
	if s.missions == nil {
		return
	}
	s.handle(http.MethodGet, "/v1/core/missions", s.handleListMissions, routeList)
	s.handle(http.MethodPost, "/v1/core/missions", s.handleCreateMission, 0)
	s.handle(http.MethodGet, "/v1/core/missions/:mission_id", s.handleGetMission, routeList) // and missions/my
	s.handle(http.MethodPost, "/v1/core/missions/:mission_id/claim", missionTransition(s, s.mission.Claim), 0)
	s.handle(http.MethodPost, "/v1/core/missions/:mission_id/complete", missionTransition(s, s.mission.Complete), 0)
	s.handle(http.MethodPost, "/v1/core/missions/:mission_id/settle", missionTransition(s, s.mission.Settle), 0)
	s.handle(http.MethodGet, "/v1/supervision/missions", s.handleSupervisionMissions, routeOwner|routeList)
}

// myMissions is the mission id under which GET serves /v1/core/missions/my.
const myMissions = "my"

// missionsResponse is GET /v1/core/missions.
type missionsResponse struct {
	Missions   []projections.MissionRecord `json:"missions"`
	NextCursor *string                     `json:"next_cursor"` // null on the last page
}

func (s *Server) handleListMissions(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	page, err := s.listMissions(r.Context(), r.URL.Query())
	if err != nil {
		return err
	}
	return writeJSON(w, page)
}

// listMissions is the page of GET /v1/core/missions (and of the list_missions
// tool) that the query q asks for; ctx's page budget (pageBudget) bounds it.
func (s *Server) listMissions(ctx context.Context, q url.Values) (missionsResponse, error) {
	f, cursor, limit, err := s.missionListQuery(q)
	if err != nil {
		return missionsResponse{}, err
	}
	ms, next, err := s.missions.List(f, projections.Page{Cursor: cursor, Limit: limit, Bytes: s.itemBytes(ctx)})
	if err != nil {
		return missionsResponse{}, cursorError(err)
	}
	return missionsResponse{Missions: ms, NextCursor: nullable(next)}, nil
}

// missionListQuery parses the filters and paging the mission lists share.
func (s *Server) missionListQuery(q url.Values) (f projections.MissionFilter, cursor string, limit int, err error) {
	if f, err = s.missionFilter(q); err != nil {
		return f, "", 0, err
	}
	limit, cursor, err = pageQuery(q, defaultLimit)
	return f, cursor, limit, err
}

// missionFilter parses the list filters. A value no mission could have is 400,
// naming the parameter, rather than an empty list that hides the typo.
func (s *Server) missionFilter(q url.Values) (projections.MissionFilter, error) {
	roles := s.mission.Roles()
	var f projections.MissionFilter
	states := []string{events.StateCreated, events.StateClaimed, events.StateCompleted, events.StateSettled}
	for _, p := range []struct {
		name  string
		to    *string
		valid func(string) bool
		rule  string
	}{
		{"state", &f.State, func(v string) bool { return slices.Contains(states, v) }, "one of " + strings.Join(states, ", ")},
		{"subnet_id", &f.SubnetID, commands.IsSlug, "1 to 64 characters of a-z, 0-9 and -"},
		{"domain", &f.Domain, commands.IsSlug, "1 to 64 characters of a-z, 0-9 and -"},
		{"required_role", &f.RequiredRole, func(v string) bool { return slices.Contains(roles, v) },
			"one of " + strings.Join(roles, ", ")},
		{"publisher", &f.Publisher, commands.IsSlug, "a public_id or subnet id: 1 to 64 characters of a-z, 0-9 and -"},
	} {
		v, err := queryValue(q, p.name)
		if err != nil {
			return f, err
		}
		if v != "" && !p.valid(v) {
			return f, invalidField(p.name, "%s must be %s", p.name, p.rule)
		}
		*p.to = v
	}
	return f, nil
}

func (s *Server) handleCreateMission(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in commands.CreateMissionInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := s.mission.Create(r.Context(), requestActor(r.Context()), in)
	if err != nil {
		return err
	}
	return s.writeMission(w, res)
}

// handleGetMission answers GET /v1/core/missions/{mission_id}, and
// GET /v1/core/missions/my.
func (s *Server) handleGetMission(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	id := ps.ByName("mission_id")
	if id == myMissions {
		return s.handleMyMissions(w, r)
	}
	rec, err := s.missionByID(id)
	if err != nil {
		return err
	}
	return writeJSON(w, rec)
}

// missionByID is the record of GET /v1/core/missions/{mission_id} (and of the
// get_mission tool): 404 mission_not_found for an unknown id.
func (s *Server) missionByID(id string) (projections.MissionRecord, error) {
	rec, ok, err := s.missions.Mission(id)
	if err != nil {
		return projections.MissionRecord{}, err
	}
	if !ok {
		return projections.MissionRecord{}, errMissionNotFound(id)
	}
	return rec, nil
}

// myMissionsResponse is GET /v1/core/missions/my.
type myMissionsResponse struct {
	Claimed   []projections.MissionRecord `json:"claimed"`
	Published []projections.MissionRecord `json:"published"`
}

// handleMyMissions lists the missions an identity claimed and those it
// published, the newest limit (default 100) of each, oldest first, the two
// lists sharing the page byte budget half and half (a list it cut is marked
// with PageTruncatedHeader). Like the
// supervision home, the owner reads any identity's and an agent token only its
// own identity's.
func (s *Server) handleMyMissions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	slug, err := queryPublicID(q)
	if err != nil {
		return err
	}
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	id, ok, err := s.identities.IdentityBySlug(slug)
	if err != nil {
		return err
	}
	if !ok {
		return commands.NotFound("identity_not_found", "public_id", "no identity has public_id %s", slug)
	}
	if actor := requestActor(r.Context()); actor.Kind != commands.ActorOwner {
		if err := commands.RequireActsFor(actor, s.log.NodeDID(), id); err != nil {
			return err
		}
	}
	claimed, published, cut, err := s.missions.Mine(id.AgentDID, limit, s.itemBytes(r.Context())/2)
	if err != nil {
		return err
	}
	if cut {
		w.Header().Set(PageTruncatedHeader, "true")
	}
	return writeJSON(w, myMissionsResponse{Claimed: claimed, Published: published})
}

// missionTransition is the handler of one lifecycle step (claim, complete,
// settle): decode the step's body strictly, run the command as the request's
// actor and answer with the mission's full record.
func missionTransition[In any](s *Server, step func(context.Context, commands.Actor, string, In) (commands.MissionResult, error)) handler {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
		var in In
		if err := s.decodeJSON(w, r, &in); err != nil {
			return err
		}
		res, err := step(r.Context(), requestActor(r.Context()), ps.ByName("mission_id"), in)
		if err != nil {
			return err
		}
		return s.writeMission(w, res)
	}
}

// writeMission answers a write with the mission's full record.
func (s *Server) writeMission(w http.ResponseWriter, res commands.MissionResult) error {
	rec, err := s.writtenMission(res)
	if err != nil {
		return err
	}
	return writeJSON(w, rec)
}

// writtenMission is the full record of a mission a command has just written,
// as the command's own step left it: the record the fold of the write's first
// event produced (projections.Missions.Written), not a read of the model, in
// which a later step of another request may already show (the answer is the
// write's, so the history stays linearizable).
func (s *Server) writtenMission(res commands.MissionResult) (projections.MissionRecord, error) {
	if len(res.Events) > 0 {
		rec, ok, err := s.missions.Written(&res.Events[0])
		if err != nil || ok {
			return rec, err
		}
	}
	// Appended but not folded: the log does not fold into the missions
	// model, a wiring fault (500).
	return projections.MissionRecord{}, fmt.Errorf("mission %s: appended but not in the read model", res.MissionID)
}

func errMissionNotFound(id string) error {
	return commands.NotFound("mission_not_found", "", "no mission has mission_id %s", id)
}

// supervisionMissionsResponse is GET /v1/supervision/missions.
type supervisionMissionsResponse struct {
	Missions   []projections.SupervisedMission `json:"missions"`
	NextCursor *string                         `json:"next_cursor"`
}

// handleSupervisionMissions lists every mission with its internal fields, with
// the list's filters and paging.
func (s *Server) handleSupervisionMissions(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	f, cursor, limit, err := s.missionListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	ms, next, err := s.missions.Supervise(f, projections.Page{Cursor: cursor, Limit: limit, Bytes: s.itemBytes(r.Context())})
	if err != nil {
		return cursorError(err)
	}
	return writeJSON(w, supervisionMissionsResponse{Missions: ms, NextCursor: nullable(next)})
}
