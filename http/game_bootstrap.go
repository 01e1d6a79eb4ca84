package http

import (
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// GET /v1/game/bootstrap: the recommended sequence that takes a fresh runtime
// from nothing to an agent with a first settled contract, computed from this
// node's state on every request (docs/game.md "The bootstrap sequence").
//
// Every step names the request that does it. Ids this node knows are filled in
// (agent_did, public_id, mission_id); the caller's own choices are placeholders
// written "{name}" in the path or a body value, each explained under the
// step's placeholders, with the accepted values as choices when there is a
// fixed list. A client follows the sequence by taking the first step that is
// not done, replacing its placeholders, sending it with the owner token, and
// reading the sequence again.

// bootstrapStep is one step of the sequence.
type bootstrapStep struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Body is the request body to send, an object, after replacing
	// placeholders.
	Body map[string]any `json:"body"`
	// Placeholders explains each "{name}" in Path and Body.
	Placeholders map[string]placeholder `json:"placeholders"`
	// Done reports whether this node's state shows the step taken.
	Done bool   `json:"done"`
	Why  string `json:"why"`
}

// placeholder is what to put in place of a "{name}".
type placeholder struct {
	About   string   `json:"about"`
	Choices []string `json:"choices,omitempty"`
}

// gameBootstrapResponse is GET /v1/game/bootstrap.
type gameBootstrapResponse struct {
	CatalogVersion string `json:"catalog_version"`
	// Complete is true when every step is done.
	Complete bool `json:"complete"`
	// NextStep is the id of the first step not done; null when complete.
	NextStep *string         `json:"next_step"`
	Steps    []bootstrapStep `json:"steps"`
}

func (s *Server) handleGameBootstrap(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	guide, err := s.bootstrapGuide()
	if err != nil {
		return err
	}
	return writeJSON(w, guide)
}

// Placeholder names a step may use; the values are filled in when the node
// knows them.
const (
	phAgentDID  = "{agent_did}"
	phPublicID  = "{public_id}"
	phMissionID = "{mission_id}"
)

// bootstrapState is what the guide reads of the node: the identities that the
// steps name and the starter set's missions.
type bootstrapState struct {
	first, firstBound, claimer projections.SupervisedIdentity
	anyIdentity, anyBound      bool
	anyRole, canClaim          bool
	claimMission               events.MissionRef
	installed                  bool
	starters                   []projections.MissionRecord
}

// bootstrapState reads the state in one walk over the identities, in creation
// order, which stops as soon as every question has its answer. Whom the owner
// may act for and who may claim what are the commands' rules
// (commands.Actor.ActsFor, commands.Mission.Claimable), asked, not restated.
func (s *Server) bootstrapState() (bootstrapState, error) {
	var st bootstrapState
	starter, installed, err := s.gameState.Starter()
	if err != nil {
		return st, err
	}
	st.installed = installed
	var open []events.MissionRef // created starter missions, in the set's order
	for _, id := range starter.MissionIDs {
		m, ok, err := s.missions.Mission(id)
		if err != nil {
			return st, err
		}
		if !ok {
			continue
		}
		st.starters = append(st.starters, m)
		if m.State == events.StateCreated {
			ref, _, err := s.missions.MissionRef(id)
			if err != nil {
				return st, err
			}
			open = append(open, ref)
		}
	}
	owner := commands.Actor{Kind: commands.ActorOwner, Governs: s.governs}
	nodeDID := s.log.NodeDID()
	_, _, err = s.identities.Find(func(id projections.SupervisedIdentity) bool {
		ref := id.Ref()
		if !st.anyIdentity {
			st.first, st.anyIdentity = id, true
		}
		st.anyRole = st.anyRole || id.Profile.Role != nil
		if owner.ActsFor(nodeDID, ref) && commands.ActiveController(ref) {
			if !st.anyBound {
				st.firstBound, st.anyBound = id, true
			}
			for _, m := range open {
				if !st.canClaim && s.mission.Claimable(owner, m, ref, id.Profile.Fields()) {
					st.claimer, st.claimMission, st.canClaim = id, m, true
				}
			}
		}
		return st.anyBound && st.anyRole && (st.canClaim || len(open) == 0)
	})
	return st, err
}

// reached reports whether some starter mission is in one of states.
func (st *bootstrapState) reached(states ...string) bool {
	for _, m := range st.starters {
		if slices.Contains(states, m.State) {
			return true
		}
	}
	return false
}

// missionPath is the path of action on the first starter mission in state.
func (st *bootstrapState) missionPath(state, action string) string {
	for _, m := range st.starters {
		if m.State == state {
			return "/v1/core/missions/" + m.MissionID + "/" + action
		}
	}
	return "/v1/core/missions/" + phMissionID + "/" + action
}

// bootstrapGuide computes the sequence from the read models.
func (s *Server) bootstrapGuide() (gameBootstrapResponse, error) {
	st, err := s.bootstrapState()
	if err != nil {
		return gameBootstrapResponse{}, err
	}
	first, anyIdentity, firstBound, anyBound := st.first, st.anyIdentity, st.firstBound, st.anyBound
	packInstalled, err := s.gameState.PackInstalled(s.catalog.DefaultPack().ID)
	if err != nil {
		return gameBootstrapResponse{}, err
	}
	agentDID := func(id projections.SupervisedIdentity, ok bool) string {
		if ok {
			return id.AgentDID
		}
		return phAgentDID
	}
	profileFor, profileOK := firstBound, anyBound
	if !anyBound {
		profileFor, profileOK = first, anyIdentity
	}
	claimPath, claimBody := "/v1/core/missions/"+phMissionID+"/claim", map[string]any{"claimer": phPublicID}
	if st.canClaim {
		claimPath, claimBody = "/v1/core/missions/"+st.claimMission.MissionID+"/claim", map[string]any{"claimer": st.claimer.PublicID}
	}
	subnet := "its governed subnet"
	if len(s.governs) > 0 {
		subnet = s.governs[0]
	}
	pack := s.catalog.DefaultPack()

	steps := []bootstrapStep{
		{
			ID: "bootstrap-identity", Title: "Bootstrap an agent identity",
			Method: http.MethodPost, Path: "/v1/civilization/bootstrap-identity",
			Body: map[string]any{"display_name": "{display_name}", "public_id": phPublicID},
			Placeholders: map[string]placeholder{
				"display_name": {About: "the agent's name, 1 to 64 characters"},
				"public_id":    {About: "the agent's slug, 3 to 40 characters of a-z, 0-9 and -; leave the field out to have one made from display_name"},
			},
			Done: anyIdentity,
			Why:  "An agent acts, claims and is paid under a DID of its own; the answer holds its agent_did and public_id, which the next steps use.",
		},
		{
			ID: "bind-controller", Title: "Bind a controller to the agent",
			Method: http.MethodPost, Path: "/v1/civilization/controller-binding",
			Body: map[string]any{"agent_did": agentDID(first, anyIdentity), "controller_kind": "local_model", "controller_ref": "{controller_ref}"},
			Placeholders: map[string]placeholder{
				"agent_did":      {About: "the agent_did bootstrap-identity answered"},
				"controller_ref": {About: "a reference unique to the runtime controller that drives the agent, such as its host and process name"},
			},
			Done: anyBound,
			Why:  "Without an active controller binding an agent cannot receive tasks, and a claim is refused as not_eligible.",
		},
		{
			ID: "set-profile", Title: "Choose a faction, a role and a strategy",
			Method: http.MethodPost, Path: "/v1/civilization/profile",
			Body: map[string]any{"agent_did": agentDID(profileFor, profileOK), "faction": "{faction}", "role": "{role}", "strategy": "{strategy}"},
			Placeholders: map[string]placeholder{
				"agent_did": {About: "the agent_did bootstrap-identity answered"},
				"faction":   {About: "the agent's faction; some missions require one", Choices: s.catalog.FactionIDs()},
				"role":      {About: "the agent's role; most missions require one", Choices: s.catalog.RoleIDs()},
				"strategy":  {About: "a hint to the runtime scheduler", Choices: s.catalog.StrategyIDs()},
			},
			Done: st.anyRole,
			Why:  "A claim checks the claimer's role and faction against the mission's; GET /v1/game/catalog describes each. The profile is replaced whole.",
		},
		{
			ID: "install-starter-missions", Title: "Publish the starter missions",
			Method: http.MethodPost, Path: "/v1/game/starter-missions/bootstrap",
			Body: map[string]any{}, Placeholders: map[string]placeholder{},
			Done: st.installed,
			Why:  "The starter set is small first contracts published by the government of " + subnet + ", one for each role and some for anyone. Safe to repeat.",
		},
		{
			ID: "claim-starter-mission", Title: "Claim a starter mission",
			Method: http.MethodPost, Path: claimPath, Body: claimBody,
			Placeholders: map[string]placeholder{
				"mission_id": {About: "a created starter mission (GET /v1/game/starter-missions) whose required_role and required_faction the claimer's profile meets"},
				"public_id":  {About: "the public_id of an agent with an active controller binding"},
			},
			Done: st.reached(events.StateClaimed, events.StateCompleted, events.StateSettled),
			Why:  "The claim gives the mission to the agent alone. The node proposes the oldest bound agent and the first created starter mission its role and faction admit.",
		},
		{
			ID: "complete-starter-mission", Title: "Complete the claimed mission",
			Method: http.MethodPost, Path: st.missionPath(events.StateClaimed, "complete"),
			Body: map[string]any{"result": "{result}"},
			Placeholders: map[string]placeholder{
				"mission_id": {About: "the mission_id of the claimed starter mission"},
				"result":     {About: "the agent's result, free text or serialised JSON, 1 to 262144 bytes"},
			},
			Done: st.reached(events.StateCompleted, events.StateSettled),
			Why:  "The result is stored for the publisher to inspect before it settles.",
		},
		{
			ID: "settle-starter-mission", Title: "Settle the completed mission",
			Method: http.MethodPost, Path: st.missionPath(events.StateCompleted, "settle"),
			Body:         map[string]any{},
			Placeholders: map[string]placeholder{"mission_id": {About: "the mission_id of the completed starter mission"}},
			Done:         st.reached(events.StateSettled),
			Why:          "The owner settles as the governance actor of the publishing subnet; the reward is paid to the agent and the subnet treasury.",
		},
		{
			ID: "install-mission-pack", Title: "Install the mission pack " + pack.ID,
			Method: http.MethodPost, Path: "/v1/game/mission-pack/bootstrap",
			Body: map[string]any{}, Placeholders: map[string]placeholder{},
			Done: packInstalled,
			Why:  "After a first contract, the pack's guild work: missions that ask for a role and often a faction, and pay more. Safe to repeat.",
		},
	}
	for i := range steps {
		steps[i].prunePlaceholders()
	}
	resp := gameBootstrapResponse{CatalogVersion: s.catalog.Version, Complete: true, Steps: steps}
	for _, st := range steps {
		if !st.Done {
			id := st.ID
			resp.Complete, resp.NextStep = false, &id
			break
		}
	}
	return resp, nil
}

// prunePlaceholders drops the explanations of placeholders the node has filled
// in, so that a step lists exactly the "{name}"s left in its path and body.
func (st *bootstrapStep) prunePlaceholders() {
	for name := range st.Placeholders {
		ph := "{" + name + "}"
		used := strings.Contains(st.Path, ph)
		for _, v := range st.Body {
			if v == ph {
				used = true
			}
		}
		if !used {
			delete(st.Placeholders, name)
		}
	}
}
