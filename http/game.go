package http

import (
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/catalog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// The game layer's state and installs (docs/game.md). The
// installs go through commands.Game, which publishes through the mission rules
// and records the set as installed in the same append; every answer is read back
// from the read models, which OnCommit has updated before the command returns,
// so a repeat or a concurrent install that published nothing still answers with
// the missions the first one published. Owner and agent tokens read; only the
// owner installs; observers get 403 everywhere.

// gameRoutes registers the game endpoints but the catalog, when the server has
// the game commands and read model.
func (s *Server) gameRoutes() {
	if s.gameState == nil {
		return
	}
	s.handle(http.MethodGet, "/v1/game/status", s.handleGameStatus, 0)
	s.handle(http.MethodGet, "/v1/game/bootstrap", s.handleGameBootstrap, 0)
	s.handle(http.MethodGet, "/v1/game/starter-missions", s.handleStarterMissions, 0)
	s.handle(http.MethodPost, "/v1/game/starter-missions/bootstrap", s.handleInstallStarterMissions, routeOwner)
	s.handle(http.MethodGet, "/v1/game/mission-pack", s.handleMissionPack, 0)
	s.handle(http.MethodPost, "/v1/game/mission-pack/bootstrap", s.handleInstallMissionPack, routeOwner)
}

// missionStateCounts counts missions by state, in the states' order.
type missionStateCounts struct {
	Created   int `json:"created"`
	Claimed   int `json:"claimed"`
	Completed int `json:"completed"`
	Settled   int `json:"settled"`
}

func (c *missionStateCounts) add(state string) {
	switch state {
	case events.StateCreated:
		c.Created++
	case events.StateClaimed:
		c.Claimed++
	case events.StateCompleted:
		c.Completed++
	case events.StateSettled:
		c.Settled++
	}
}

// gameInstallView is a set's installation: null and empty until installed.
type gameInstallView struct {
	Installed   bool    `json:"installed"`
	InstalledAt *string `json:"installed_at"`
	// InstalledCatalogVersion is the version of the catalog the set was
	// installed from, which a later --catalog may have moved on from.
	InstalledCatalogVersion *string `json:"installed_catalog_version"`
	// SubnetID is the subnet whose government published the missions.
	SubnetID    *string `json:"subnet_id"`
	InstalledBy *string `json:"installed_by"`
	// MissionIDs are the published missions in the set's order.
	MissionIDs []string `json:"mission_ids"`
	// MissionsByState counts those missions by their state now.
	MissionsByState missionStateCounts `json:"missions_by_state"`
}

// installView describes in, found or not, with the states of its missions.
func (s *Server) installView(in projections.GameInstall, found bool) (gameInstallView, error) {
	v := gameInstallView{MissionIDs: []string{}}
	if !found {
		return v, nil
	}
	v.Installed = true
	v.InstalledAt, v.InstalledCatalogVersion = &in.InstalledAt, &in.CatalogVersion
	v.SubnetID, v.InstalledBy = &in.SubnetID, &in.InstalledBy
	v.MissionIDs = in.MissionIDs
	for _, id := range in.MissionIDs {
		m, ok, err := s.missions.Mission(id)
		if err != nil {
			return v, err
		}
		if ok {
			v.MissionsByState.add(m.State)
		}
	}
	return v, nil
}

// gameMission is one template of a set and, once installed, its mission.
type gameMission struct {
	TemplateID string `json:"template_id"`
	// Template is the template in the node's catalog; null when an installed
	// set's template is no longer in it (the node now runs another catalog).
	Template *catalog.MissionTemplate `json:"template"`
	// Mission is the published mission's record; null until installed.
	Mission *projections.MissionRecord `json:"mission"`
}

// setMissions pairs a set's templates with its missions: the installed set's
// templates in its recorded order when installed, else the catalog's.
func (s *Server) setMissions(templates []catalog.MissionTemplate, in projections.GameInstall, installed bool) ([]gameMission, error) {
	if !installed {
		out := make([]gameMission, len(templates))
		for i := range templates {
			out[i] = gameMission{TemplateID: templates[i].ID, Template: &templates[i]}
		}
		return out, nil
	}
	out := make([]gameMission, len(in.MissionIDs))
	for i, id := range in.MissionIDs {
		m, ok, err := s.missions.Mission(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			// The set's missions precede its record in one append: a wiring fault.
			return nil, fmt.Errorf("installed mission %s is not in the read model", id)
		}
		out[i] = gameMission{TemplateID: in.TemplateIDs[i], Mission: &m}
		if t, ok := s.catalog.Template(in.TemplateIDs[i]); ok {
			out[i].Template = &t
		}
	}
	return out, nil
}

// starterMissionsResponse is GET /v1/game/starter-missions.
type starterMissionsResponse struct {
	// CatalogVersion is the version of the catalog the node runs with.
	CatalogVersion string `json:"catalog_version"`
	gameInstallView
	Missions []gameMission `json:"missions"`
}

func (s *Server) starterMissions() (starterMissionsResponse, error) {
	in, ok, err := s.gameState.Starter()
	if err != nil {
		return starterMissionsResponse{}, err
	}
	ms, err := s.setMissions(s.catalog.Starter(), in, ok)
	if err != nil {
		return starterMissionsResponse{}, err
	}
	view, err := s.installView(in, ok)
	return starterMissionsResponse{CatalogVersion: s.catalog.Version, gameInstallView: view, Missions: ms}, err
}

func (s *Server) handleStarterMissions(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	resp, err := s.starterMissions()
	if err != nil {
		return err
	}
	return writeJSON(w, resp)
}

// missionPackResponse is GET /v1/game/mission-pack.
type missionPackResponse struct {
	CatalogVersion string `json:"catalog_version"`
	// Pack is the catalog's default mission pack, the one an install installs.
	Pack catalog.MissionPack `json:"pack"`
	gameInstallView
	Missions []gameMission `json:"missions"`
}

func (s *Server) missionPack() (missionPackResponse, error) {
	pack := s.catalog.DefaultPack()
	in, ok, err := s.gameState.Pack(pack.ID)
	if err != nil {
		return missionPackResponse{}, err
	}
	ms, err := s.setMissions(s.catalog.PackTemplates(pack.ID), in, ok)
	if err != nil {
		return missionPackResponse{}, err
	}
	view, err := s.installView(in, ok)
	return missionPackResponse{CatalogVersion: s.catalog.Version, Pack: pack, gameInstallView: view, Missions: ms}, err
}

func (s *Server) handleMissionPack(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	resp, err := s.missionPack()
	if err != nil {
		return err
	}
	return writeJSON(w, resp)
}

// decodeInstall reads an install's body, which must be exactly an empty object:
// an unknown field is 400 unknown_field, and anything but an object, null
// included, is 400 invalid_json.
func (s *Server) decodeInstall(w http.ResponseWriter, r *http.Request) (commands.InstallInput, error) {
	var in *commands.InstallInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return commands.InstallInput{}, err
	}
	if in == nil {
		return commands.InstallInput{}, invalidJSON("request body must be an empty object {}, not null")
	}
	return *in, nil
}

// installStarterResponse answers POST /v1/game/starter-missions/bootstrap:
// whether this call published the set, then the set as GET shows it.
type installStarterResponse struct {
	Published bool `json:"published"`
	starterMissionsResponse
}

func (s *Server) handleInstallStarterMissions(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	in, err := s.decodeInstall(w, r)
	if err != nil {
		return err
	}
	res, err := s.game.InstallStarterMissions(r.Context(), requestActor(r.Context()), in)
	if err != nil {
		return err
	}
	resp, err := s.starterMissions()
	if err != nil {
		return err
	}
	if !resp.Installed {
		return fmt.Errorf("starter missions: installed but not in the read model")
	}
	return writeJSON(w, installStarterResponse{Published: res.Published, starterMissionsResponse: resp})
}

// installPackResponse answers POST /v1/game/mission-pack/bootstrap.
type installPackResponse struct {
	Published bool `json:"published"`
	missionPackResponse
}

func (s *Server) handleInstallMissionPack(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	in, err := s.decodeInstall(w, r)
	if err != nil {
		return err
	}
	res, err := s.game.InstallMissionPack(r.Context(), requestActor(r.Context()), in)
	if err != nil {
		return err
	}
	resp, err := s.missionPack()
	if err != nil {
		return err
	}
	if !resp.Installed {
		return fmt.Errorf("mission pack %s: installed but not in the read model", resp.Pack.ID)
	}
	return writeJSON(w, installPackResponse{Published: res.Published, missionPackResponse: resp})
}

// gameStatusResponse is GET /v1/game/status.
type gameStatusResponse struct {
	// CatalogVersion is the version of the catalog the node runs with.
	CatalogVersion string `json:"catalog_version"`
	// GovernedSubnet is the subnet whose government publishes the game's
	// missions on an install: the first the node governs.
	GovernedSubnet *string `json:"governed_subnet"`
	// ActivePacks are the ids of the mission packs installed on this node, in
	// install order.
	ActivePacks     []string            `json:"active_packs"`
	StarterMissions gameInstallView     `json:"starter_missions"`
	MissionPack     gamePackStatus      `json:"mission_pack"`
	Bootstrap       gameBootstrapStatus `json:"bootstrap"`
}

// gamePackStatus is the default mission pack's installation.
type gamePackStatus struct {
	PackID string `json:"pack_id"`
	gameInstallView
}

// gameBootstrapStatus sums up GET /v1/game/bootstrap.
type gameBootstrapStatus struct {
	Complete   bool    `json:"complete"`
	StepsDone  int     `json:"steps_done"`
	StepsTotal int     `json:"steps_total"`
	NextStep   *string `json:"next_step"` // null when complete
}

func (s *Server) handleGameStatus(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	resp := gameStatusResponse{CatalogVersion: s.catalog.Version, ActivePacks: []string{}}
	if len(s.governs) > 0 {
		resp.GovernedSubnet = &s.governs[0]
	}
	packs, err := s.gameState.Packs()
	if err != nil {
		return err
	}
	for _, p := range packs {
		resp.ActivePacks = append(resp.ActivePacks, p.PackID)
	}
	in, ok, err := s.gameState.Starter()
	if err != nil {
		return err
	}
	if resp.StarterMissions, err = s.installView(in, ok); err != nil {
		return err
	}
	pack := s.catalog.DefaultPack()
	if in, ok, err = s.gameState.Pack(pack.ID); err != nil {
		return err
	}
	view, err := s.installView(in, ok)
	if err != nil {
		return err
	}
	resp.MissionPack = gamePackStatus{PackID: pack.ID, gameInstallView: view}
	guide, err := s.bootstrapGuide()
	if err != nil {
		return err
	}
	resp.Bootstrap = gameBootstrapStatus{Complete: guide.Complete, StepsTotal: len(guide.Steps), NextStep: guide.NextStep}
	for _, st := range guide.Steps {
		if st.Done {
			resp.Bootstrap.StepsDone++
		}
	}
	return writeJSON(w, resp)
}
