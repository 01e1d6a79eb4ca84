package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// The property test drives the mission commands with random sequences of
// create, claim, complete and settle by random actors with random inputs, valid
// or not, interleaved with changes to the agents' bindings and profiles. An
// oracle, a direct transcription of the mission rules of docs/api.md, predicts each
// outcome. After every step it checks that
//   - the command did what the oracle predicted: the same refusal (kind and code)
//     or success, and a refusal appended nothing;
//   - every mission is in the state the oracle holds, in both the read and the
//     decision model, and its record is consistent with that state;
//   - every agent's balance, identity stats and every subnet's treasury equal the
//     sum of the rewards of the settled missions it claimed or hosts.
//
// Seeds are fixed, so a failure reproduces.

type oAgent struct {
	slug, did     string
	faction, role string
	bound         bool
}

type oMission struct {
	id, state, publisher, kind, issuer, subnet string
	role, faction                              *string
	reward                                     events.Reward
	claimer                                    *oAgent
}

type oracle struct {
	node     string
	agents   []*oAgent
	bySlug   map[string]*oAgent
	missions []*oMission
	byID     map[string]*oMission
	balance  map[string]events.Reward // by agent DID
	treasury map[string]int64
}

// outcome is a predicted or actual result: "" for success, else kind/code.
type outcome string

func refusal(kind commands.Kind, code string) outcome {
	return outcome(fmt.Sprintf("%d/%s", kind, code))
}

func actual(err error) outcome {
	if err == nil {
		return ""
	}
	var ce *commands.Error
	if !errors.As(err, &ce) {
		return outcome("error: " + err.Error())
	}
	return refusal(ce.Kind, ce.Code)
}

var (
	forbidden   = refusal(commands.KindForbidden, "forbidden")
	notEligible = refusal(commands.KindForbidden, "not_eligible")
	badInput    = refusal(commands.KindInvalid, "invalid_field")
	noMission   = refusal(commands.KindNotFound, "mission_not_found")
	noIdentity  = refusal(commands.KindNotFound, "identity_not_found")
	badState    = refusal(commands.KindConflict, "invalid_state")
	taken       = refusal(commands.KindConflict, "already_claimed")
)

// actor is one of the property test's actors: the owner (governs genesis), an
// agent token, or an observer.
type actor struct {
	a     commands.Actor
	agent *oAgent // for agent tokens
}

func (o *oracle) actsFor(a actor, ag *oAgent) bool {
	switch a.a.Kind {
	case commands.ActorOwner:
		return true // every identity here is controlled from this node
	case commands.ActorAgent:
		return a.agent == ag
	}
	return false
}

func governs(a actor, subnet string) bool {
	return a.a.Kind == commands.ActorOwner && subnet == "genesis"
}

func (o *oracle) create(a actor, in commands.CreateMissionInput) (outcome, string) {
	if a.a.Kind == commands.ActorObserver {
		return forbidden, ""
	}
	if *in.Reward.AgentCredit < 0 {
		return badInput, ""
	}
	ag := o.bySlug[in.Publisher]
	if in.PublisherKind == events.PublisherPlanetaryGovernment {
		switch {
		case governs(a, in.Publisher):
			return "", o.node
		case ag != nil && o.actsFor(a, ag):
			return badInput, ""
		}
		return forbidden, ""
	}
	switch {
	case ag != nil && o.actsFor(a, ag):
		return "", ag.did
	case ag == nil && governs(a, in.Publisher):
		return badInput, ""
	}
	return forbidden, ""
}

func (o *oracle) claim(a actor, m *oMission, slug string) outcome {
	ag := o.bySlug[slug]
	switch {
	case a.a.Kind == commands.ActorObserver:
		return forbidden
	case m == nil:
		return noMission
	case ag == nil:
		return noIdentity
	case !o.actsFor(a, ag):
		return forbidden
	case ag.did == m.issuer, !ag.bound,
		m.role != nil && *m.role != ag.role, m.faction != nil && *m.faction != ag.faction:
		return notEligible
	case m.state == events.StateClaimed:
		return taken
	case m.state != events.StateCreated:
		return badState
	}
	return ""
}

func (o *oracle) complete(a actor, m *oMission, result string) outcome {
	switch {
	case a.a.Kind == commands.ActorObserver:
		return forbidden
	case result == "":
		return badInput
	case m == nil:
		return noMission
	case m.state == events.StateCreated:
		return badState
	case !o.actsFor(a, m.claimer):
		return forbidden
	case m.state != events.StateClaimed:
		return badState
	}
	return ""
}

func (o *oracle) settle(a actor, m *oMission) outcome {
	if a.a.Kind == commands.ActorObserver {
		return forbidden
	}
	if m == nil {
		return noMission
	}
	ok := false
	if m.kind == events.PublisherPlanetaryGovernment {
		ok = governs(a, m.publisher)
	} else {
		for _, ag := range o.agents {
			if ag.did == m.issuer && o.actsFor(a, ag) {
				ok = true
			}
		}
	}
	if !ok && !governs(a, m.subnet) {
		return forbidden
	}
	if m.state != events.StateCompleted {
		return badState
	}
	return ""
}

func TestMissionCommandsProperty(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runMissionProperty(t, seed, 400) })
	}
}

func runMissionProperty(t *testing.T, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	n := newMissionNode(t)
	ctx := context.Background()
	o := &oracle{node: n.log.NodeDID(), bySlug: map[string]*oAgent{}, byID: map[string]*oMission{},
		balance: map[string]events.Reward{}, treasury: map[string]int64{}}
	factions, roles := []string{"order", "frontier"}, []string{"enforcer", "archivist"}
	for i := range 6 {
		ag := &oAgent{slug: fmt.Sprintf("agent-%d", i), faction: factions[rng.Intn(2)], role: roles[rng.Intn(2)], bound: rng.Intn(4) > 0}
		ag.did = n.agent(ag.slug, ag.faction, ag.role, ag.bound)
		o.agents = append(o.agents, ag)
		o.bySlug[ag.slug] = ag
	}
	actors := []actor{{a: owner}, {a: observer}}
	for _, ag := range o.agents {
		actors = append(actors, actor{a: agentActor(ag.did), agent: ag})
	}
	pick := func(xs []string) string { return xs[rng.Intn(len(xs))] }
	maybe := func(xs ...string) *string {
		if i := rng.Intn(len(xs) + 1); i < len(xs) {
			return &xs[i]
		}
		return nil
	}
	var randomMission func() (string, *oMission)
	anyMission := func() (string, *oMission) {
		if len(o.missions) == 0 || rng.Intn(12) == 0 {
			return "019b0000-0000-7000-8000-00000000dead", nil
		}
		// Mostly the newest missions, which are still moving.
		i := len(o.missions) - 1 - rng.Intn(min(len(o.missions), 6))
		if rng.Intn(4) == 0 {
			i = rng.Intn(len(o.missions))
		}
		m := o.missions[i]
		return m.id, m
	}
	slugs := []string{"genesis", "rim", "nobody"}
	for _, ag := range o.agents {
		slugs = append(slugs, ag.slug)
	}
	// choose picks the actor of a step: often one that may take it (the owner, or
	// the agent token of ag), sometimes anyone, observers rarely.
	choose := func(ag *oAgent) actor {
		switch r := rng.Intn(10); {
		case r < 4:
			return actors[0]
		case r < 7 && ag != nil:
			return actor{a: agentActor(ag.did), agent: ag}
		}
		a := actors[rng.Intn(len(actors))]
		if a.a.Kind == commands.ActorObserver && rng.Intn(3) > 0 {
			a = actors[0]
		}
		return a
	}
	counts := map[string]int{}
	for step := range steps {
		var a actor
		tip := n.log.Tip().Seq
		var want, got outcome
		var appended uint64
		var what string
		// The next step of a mission is likelier than a random one, so that
		// missions get through the whole lifecycle.
		op, target := "", ""
		switch r := rng.Intn(20); {
		case r < 5:
			op = "create"
		case r < 6:
			op = "eligibility"
		case r < 12 && len(o.missions) > 0:
			m := o.missions[len(o.missions)-1-rng.Intn(min(len(o.missions), 4))]
			target = m.id
			op = map[string]string{events.StateCreated: "claim", events.StateClaimed: "complete",
				events.StateCompleted: "settle", events.StateSettled: "claim"}[m.state]
			if m.state == events.StateClaimed && rng.Intn(4) == 0 {
				op = "claim"
			}
		default:
			op = []string{"claim", "complete", "settle"}[rng.Intn(3)]
		}
		if target != "" && op != "create" {
			randomMission = func() (string, *oMission) { return target, o.byID[target] }
		} else {
			randomMission = anyMission
		}
		switch {
		case op == "create":
			in := createInput(pick(slugs), pick(commands.PublisherKinds))
			a = choose(o.bySlug[in.Publisher])
			in.SubnetID = pick([]string{"genesis", "rim"})
			in.RequiredRole, in.RequiredFaction = maybe(roles...), maybe(factions...)
			credit := int64(rng.Intn(60)) - 1
			in.Reward.AgentCredit = &credit
			var issuer string
			want, issuer = o.create(a, in)
			res, err := n.mission.Create(ctx, a.a, in)
			got, appended, what = actual(err), 1, "create "+in.Publisher+"/"+in.PublisherKind
			if want == "" && err == nil {
				m := &oMission{id: res.MissionID, state: events.StateCreated, publisher: in.Publisher, kind: in.PublisherKind,
					issuer: issuer, subnet: in.SubnetID, role: in.RequiredRole, faction: in.RequiredFaction,
					reward: events.Reward{AgentCredit: credit, Reputation: 2, Capacity: 1, TreasuryShareCredit: 4}}
				o.missions = append(o.missions, m)
				o.byID[m.id] = m
			}
		case op == "claim":
			id, m := randomMission()
			slug := pick(slugs[2:])
			if m != nil && rng.Intn(2) == 0 {
				for _, ag := range o.agents[rng.Intn(len(o.agents)):] {
					if ag.bound && ag.did != m.issuer && (m.role == nil || *m.role == ag.role) &&
						(m.faction == nil || *m.faction == ag.faction) {
						slug = ag.slug
						break
					}
				}
			}
			a = choose(o.bySlug[slug])
			want = o.claim(a, m, slug)
			_, err := n.mission.Claim(ctx, a.a, id, commands.ClaimMissionInput{Claimer: slug})
			got, appended, what = actual(err), 1, "claim by "+slug
			if want == "" && err == nil {
				m.state, m.claimer = events.StateClaimed, o.bySlug[slug]
			}
		case op == "complete":
			id, m := randomMission()
			result := pick([]string{"done", "done", "", `{"ok":true}`})
			if m != nil {
				a = choose(m.claimer)
			} else {
				a = choose(nil)
			}
			want = o.complete(a, m, result)
			_, err := n.mission.Complete(ctx, a.a, id, commands.CompleteMissionInput{Result: &result})
			got, appended, what = actual(err), 1, "complete"
			if want == "" && err == nil {
				m.state = events.StateCompleted
			}
		case op == "settle":
			id, m := randomMission()
			if m != nil {
				a = choose(o.bySlug[m.publisher])
			} else {
				a = choose(nil)
			}
			want = o.settle(a, m)
			_, err := n.mission.Settle(ctx, a.a, id, commands.SettleMissionInput{})
			got, appended, what = actual(err), 2, "settle"
			if want == "" && err == nil {
				m.state = events.StateSettled
				b := o.balance[m.claimer.did]
				b.AgentCredit += m.reward.AgentCredit
				b.Reputation += m.reward.Reputation
				b.Capacity += m.reward.Capacity
				b.TreasuryShareCredit++ // counts missions_completed
				o.balance[m.claimer.did] = b
				o.treasury[m.subnet] += m.reward.TreasuryShareCredit
			}
		default:
			// Eligibility changes: a binding turned on or off, or a new role.
			ag := o.agents[rng.Intn(len(o.agents))]
			if rng.Intn(2) == 0 {
				ag.bound = !ag.bound
				active := ag.bound
				if _, err := n.identity.UpdateControllerBinding(ctx, owner, commands.ControllerBindingInput{
					AgentDID: ag.did, ControllerKind: "local_model", ControllerRef: "ctl-" + ag.slug, Active: &active}); err != nil {
					t.Fatal(err)
				}
			} else {
				ag.role = roles[rng.Intn(2)]
				if _, err := n.identity.UpdateProfile(ctx, owner, commands.ProfileInput{AgentDID: ag.did,
					Faction: &ag.faction, Role: &ag.role}); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		counts[string(want)]++
		if got != want {
			t.Fatalf("step %d, %s by %s: got %q, oracle says %q", step, what, a.a.Kind, got, want)
		}
		if moved := n.log.Tip().Seq - tip; got == "" && moved != appended || got != "" && moved != 0 {
			t.Fatalf("step %d, %s: chain moved by %d (outcome %q)", step, what, moved, got)
		}
		checkMissionInvariants(t, step, n, o)
	}
	settled := 0
	for _, m := range o.missions {
		if m.state == events.StateSettled {
			settled++
		}
	}
	t.Logf("outcomes: %v; %d missions, %d settled", counts, len(o.missions), settled)
	if settled < 3 {
		t.Errorf("only %d missions settled", settled)
	}
	if counts[""] < 60 || counts[string(taken)] == 0 || counts[string(badState)] == 0 || counts[string(notEligible)] == 0 || counts[string(forbidden)] == 0 {
		t.Errorf("the random walk did not cover the rules: %v", counts)
	}

	// A model rebuilt from the chain answers as the live one.
	live := []any{listAll(t, n.missions), must(n.missions.Metrics()), must(n.ids.Metrics())}
	diff, err := n.log.RebuildModels(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Same() {
		t.Errorf("the models kept live differ from a rebuild: %+v", diff)
	}
	rebuilt := []any{listAll(t, n.missions), must(n.missions.Metrics()), must(n.ids.Metrics())}
	for i := range live {
		pair := [2]any{live[i], rebuilt[i]}
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
		if string(a) != string(b) {
			t.Errorf("rebuilt model differs:\n live %s\n rebuilt %s", a, b)
		}
	}
}

func listAll(t *testing.T, m *projections.Missions) []projections.SupervisedMission {
	t.Helper()
	out, _, err := m.Supervise(projections.MissionFilter{}, projections.Page{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMissionInvariants compares both models with the oracle.
func checkMissionInvariants(t *testing.T, step int, n *missionNode, o *oracle) {
	t.Helper()
	var settledCredit int64
	for _, m := range o.missions {
		for name, model := range map[string]*projections.Missions{"read": n.missions, "decision": n.mD} {
			ref, ok := found(model.MissionRef(m.id))
			if !ok || ref.State != m.state {
				t.Fatalf("step %d: %s model has mission %s in %q (%v), oracle %q", step, name, m.id, ref.State, ok, m.state)
			}
		}
		rec, _ := found(n.missions.Mission(m.id))
		var wantClaimer *string
		if m.claimer != nil {
			wantClaimer = &m.claimer.slug
		}
		switch {
		case (rec.Claimer == nil) != (wantClaimer == nil) || rec.Claimer != nil && *rec.Claimer != *wantClaimer,
			(rec.ClaimedAt == nil) != (m.state == events.StateCreated),
			(rec.Result == nil) != (m.state == events.StateCreated || m.state == events.StateClaimed),
			(rec.CompletedAt == nil) != (rec.Result == nil),
			(rec.SettledAt == nil) != (m.state != events.StateSettled):
			t.Fatalf("step %d: record inconsistent with state %s: %+v", step, m.state, rec)
		}
		if m.state == events.StateSettled {
			settledCredit += m.reward.AgentCredit
		}
	}
	var credit int64
	for _, ag := range o.agents {
		want := o.balance[ag.did]
		got := must(n.missions.Balance(ag.did))
		rec, _ := found(n.ids.Record(ag.did))
		if got.Credit != want.AgentCredit || got.Reputation != want.Reputation || got.Capacity != want.Capacity ||
			got.MissionsCompleted != want.TreasuryShareCredit || rec.Stats != got {
			t.Fatalf("step %d: %s balance %+v, stats %+v, oracle %+v", step, ag.slug, got, rec.Stats, want)
		}
		credit += got.Credit
	}
	if credit != settledCredit {
		t.Fatalf("step %d: balances sum to %d, settled rewards to %d", step, credit, settledCredit)
	}
	for _, s := range []string{"genesis", "rim"} {
		if got := must(n.missions.Treasury(s)); got != o.treasury[s] {
			t.Fatalf("step %d: treasury %s = %d, oracle %d", step, s, got, o.treasury[s])
		}
	}
}
