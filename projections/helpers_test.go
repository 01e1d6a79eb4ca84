package projections_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

var _ eventlog.Folder = projections.Folder{}

// chain is an in-memory log opened with the read models, as cmd wires it: the
// log folds every event into the models on its sequencer. The tests append
// event payloads directly: the models must fold whatever the chain holds,
// including events no command would write.
type chain struct {
	t        *testing.T
	log      *eventlog.Log
	ids      *projections.Identities
	missions *projections.Missions
	game     *projections.Game
}

// newChain opens the log; configure may change its options (a commit hook).
func newChain(t *testing.T, configure ...func(*eventlog.Options)) *chain {
	t.Helper()
	opts := eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
		Logger: slog.New(slog.DiscardHandler), Models: projections.Folder{}}
	for _, f := range configure {
		f(&opts)
	}
	l, err := eventlog.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &chain{t: t, log: l, ids: projections.NewIdentities(l),
		missions: projections.NewMissions(l), game: projections.NewGame(l)}
}

// append appends one event and returns it once durable, folded into the models.
func (c *chain) append(typ string, payload any) eventlog.Event {
	c.t.Helper()
	evs, err := c.log.Append(context.Background(), eventlog.Draft{Type: typ, Payload: payload})
	if err != nil {
		c.t.Fatal(err)
	}
	return evs[0]
}

// rebuild folds the whole chain into a fresh key space and checks that it
// equals the models the log kept while appending.
func (c *chain) rebuild(t testing.TB) eventlog.ModelDiff {
	t.Helper()
	var done, total uint64
	diff, err := c.log.RebuildModels(context.Background(), func(d, n uint64) { done, total = d, n })
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Same() || diff.Keys == 0 {
		t.Errorf("rebuilt models differ from the live ones: %+v", diff)
	}
	if tip := c.log.Tip().Seq; done != tip || total != tip {
		t.Errorf("rebuild progress ended at %d of %d, tip %d", done, total, tip)
	}
	return diff
}

// must returns the answer of a query, failing the test if the query failed:
// must(q.Count())(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// must2 is must for the queries with two answers: whether they found
// something, or the cursor of the next page.
func must2[T, U any](v T, u U, err error) func(testing.TB) (T, U) {
	return func(t testing.TB) (T, U) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v, u
	}
}

// jsonOf is v as JSON, for comparing answers.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func did(i int) string { return fmt.Sprintf("did:key:zagent%04d", i) }

func ptr[T any](v T) *T { return &v }

func (c *chain) bootstrap(i int, slug string) eventlog.Event {
	c.t.Helper()
	return c.append(events.TypeIdentityBootstrapped, events.IdentityBootstrapped{
		AgentDID: did(i), PublicID: slug, DisplayName: "Agent " + slug, KeySalt: "00"})
}

func missionID(i int) string { return fmt.Sprintf("019b0000-0000-7000-8000-%012d", i) }

var testReward = events.Reward{AgentCredit: 10, Reputation: 2, Capacity: 1, TreasuryShareCredit: 3}

func created(i int, subnet string) events.MissionCreated {
	return events.MissionCreated{MissionID: missionID(i), Title: "t", Description: "d",
		Publisher: "pub", PublisherKind: "agent", IssuerDID: did(0), Domain: "research", SubnetID: subnet,
		Reward: testReward, Payload: json.RawMessage(`{}`)}
}

func (c *chain) create(i int, subnet string) eventlog.Event {
	c.t.Helper()
	return c.append(events.TypeMissionCreated, created(i, subnet))
}

// lifecycle creates mission i and takes it through claim, completion,
// settlement and payment to claimer.
func (c *chain) lifecycle(i int, subnet string, claimer int) {
	c.t.Helper()
	id := missionID(i)
	c.create(i, subnet)
	c.append(events.TypeMissionAccepted, events.MissionAccepted{MissionID: id, IssuerDID: did(0), Claimer: "x", ClaimerDID: did(claimer), Reward: testReward})
	c.append(events.TypeMissionCompleted, events.MissionCompleted{MissionID: id, Claimer: "x", Result: "r"})
	c.append(events.TypeMissionSettled, events.MissionSettled{MissionID: id, SettledBy: did(0), Reward: testReward})
	c.append(events.TypePaymentSettled, events.PaymentSettled{MissionID: id, To: "x", ToDID: did(claimer),
		AgentCredit: 10, Reputation: 2, Capacity: 1, Treasury: subnet, TreasuryShareCredit: 3})
}

// skipped reads the three models' skipped-event counters.
func (c *chain) skipped() (ids, missions, game uint64) {
	c.t.Helper()
	return must(c.ids.Skipped())(c.t), must(c.missions.Skipped())(c.t), must(c.game.Skipped())(c.t)
}
