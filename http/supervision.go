package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/projections"
)

// The supervision views are the operator's: the identities list and the briefing
// are for the owner token (the route table says so); the home view is also open to
// an agent token for its own identity.

// supervisionIdentitiesResponse is GET /v1/supervision/identities.
type supervisionIdentitiesResponse struct {
	Identities []projections.SupervisedIdentity `json:"identities"`
	NextCursor *string                          `json:"next_cursor"`
}

// handleSupervisionIdentities lists identities with their profiles, paged like
// the identities list but with the wider default page of the API (100).
func (s *Server) handleSupervisionIdentities(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	limit, cursor, err := pageQuery(r.URL.Query(), defaultLimit)
	if err != nil {
		return err
	}
	ids, next, err := s.identities.Supervise(projections.Page{Cursor: cursor, Limit: limit, Bytes: s.itemBytes(r.Context())})
	if err != nil {
		return cursorError(err)
	}
	return writeJSON(w, supervisionIdentitiesResponse{Identities: ids, NextCursor: nullable(next)})
}

// homeActiveMissions bounds the active missions the home view lists.
const homeActiveMissions = 100

// homeResponse is GET /v1/supervision/home.
type homeResponse struct {
	Identity projections.IdentityRecord `json:"identity"`
	Profile  projections.ProfileRecord  `json:"profile"`
	// HomeSubnet is null when the profile has no home_subnet_id.
	HomeSubnet *homeSubnet `json:"home_subnet"`
	// ActiveMissions are the agent's missions that are not settled: those it
	// claimed (claimed or completed) and those it published that are still open,
	// the newest 100, oldest first.
	ActiveMissions []projections.MissionRecord `json:"active_missions"`
	// RecentEvents are the agent's latest events (at most 20), oldest first,
	// exactly as GET /v1/events serves them.
	RecentEvents []json.RawMessage `json:"recent_events"`
}

// homeSubnet is the status of the agent's home subnet.
type homeSubnet struct {
	projections.SubnetSummary
	// ZoneID is the agent's home zone in it.
	ZoneID *string `json:"zone_id"`
	// Governed is whether this node is the subnet's governance actor (--governs).
	Governed bool `json:"governed"`
}

func (s *Server) handleSupervisionHome(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	actor := requestActor(r.Context())
	slug, err := queryPublicID(r.URL.Query())
	if err != nil {
		return err
	}
	rec, ok, err := s.identities.RecordBySlug(slug)
	if err != nil {
		return err
	}
	if !ok {
		return commands.NotFound("identity_not_found", "public_id", "no identity has public_id %s", slug)
	}
	if actor.Kind != commands.ActorOwner {
		if err := commands.RequireActsFor(actor, s.log.NodeDID(), rec.Ref()); err != nil {
			return err
		}
	}
	profile, _, err := s.identities.Profile(rec.AgentDID)
	if err != nil {
		return err
	}
	resp := homeResponse{Identity: rec, Profile: profile, ActiveMissions: []projections.MissionRecord{}, RecentEvents: []json.RawMessage{}}
	if s.missions != nil {
		if resp.ActiveMissions, err = s.missions.Active(rec.AgentDID, homeActiveMissions, s.itemBytes(r.Context())); err != nil {
			return err
		}
	}
	if h := profile.HomeSubnetID; h != nil {
		sum, err := s.identities.Subnet(*h)
		if err != nil {
			return err
		}
		resp.HomeSubnet = &homeSubnet{SubnetSummary: sum, ZoneID: profile.HomeZoneID,
			Governed: slices.Contains(s.governs, *h)}
	}
	recent, err := s.identities.RecentEvents(rec.AgentDID)
	if err != nil {
		return err
	}
	for _, seq := range recent {
		ev, err := s.log.Event(seq)
		if err != nil {
			return fmt.Errorf("supervision home: %w", err)
		}
		resp.RecentEvents = append(resp.RecentEvents, json.RawMessage(ev.Raw()))
	}
	return writeJSON(w, resp)
}

func (s *Server) handleSupervisionBriefing(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	b, err := s.briefing(r.URL.Query(), supervisionTypes)
	if err != nil {
		return err
	}
	return writeJSON(w, b) // with the chain position every count was taken at
}
