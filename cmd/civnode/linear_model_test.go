package main

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// This file is the sequential specification that TestLinearizableUnderKill
// checks a recorded history against with porcupine: the mission state machine
// of docs/api.md ("Rules") and the credit that settlements pay. Clients work in
// groups: a group's missions are claimed and completed only by the group's
// identities, so a group's missions and balances are state no other group
// touches, and a history is linearizable if and only if every group's part is.
// Each group is one porcupine partition.

// linKind is the kind of a recorded operation.
type linKind uint8

const (
	linCreate      linKind = iota // POST /v1/core/missions, publisher genesis
	linClaim                      // POST …/claim {claimer}, the claimer's agent token
	linComplete                   // POST …/complete {result}, an identity's agent token
	linSettle                     // POST …/settle {}, the owner (governance actor of genesis)
	linReadMission                // GET /v1/core/missions/{mission_id}
	linReadBalance                // GET /v1/civilization/public-identity?public_id= → stats
)

var linKindNames = [...]string{"create", "claim", "complete", "settle", "read", "balance"}

func (k linKind) String() string { return linKindNames[k] }

// linIdentities is the most identities a group may have.
const linIdentities = 4

// linPhase is a mission's state; linAbsent before its create takes effect.
type linPhase uint8

const (
	linAbsent linPhase = iota
	linCreated
	linClaimed
	linCompleted
	linSettled
)

var linPhaseNames = [...]string{"absent", "created", "claimed", "completed", "settled"}

func (p linPhase) String() string { return linPhaseNames[p] }

// linInput is an operation as the client issued it. Mission is the group's
// own dense index of the mission (assigned in the order creates returned), so
// that the state can be a short string; MissionID is the node's id, for
// reading. Who is the acting identity's index in the group (claim, complete,
// balance read). Reward is the mission's agent_credit, fixed at create.
type linInput struct {
	Kind      linKind
	Group     int
	Mission   int
	MissionID string
	Who       int
	Reward    int64
}

// linOutput is what the node answered, reduced to what the model decides.
// Unknown: the request ended in a connection error, so it may or may not have
// taken effect (its Return is then linForever). A mission record (any 200 of a
// mission endpoint) sets Phase, Claimer and Reward; an identity record sets
// Credit and Completed; a refusal sets Code. Claimer is the claimer's index
// in the group plus one, 0 for none. Mission is set by create only.
type linOutput struct {
	Unknown   bool
	Status    int
	Code      string
	Mission   int
	Phase     linPhase
	Claimer   int
	Reward    int64
	Credit    int64
	Completed int64
}

// linForever is the Return of an operation whose answer never came: porcupine
// may then place it anywhere after its call, including after everything else,
// where it cannot be seen.
const linForever = int64(1<<63 - 1)

// linState is one group's state. missions holds a byte per mission index,
// phase<<4 | claimer (index+1, 0 for none); it never ends in an absent
// mission, so equal states are equal strings and the struct compares with ==.
type linState struct {
	missions  string
	credit    [linIdentities]int64
	completed [linIdentities]int64
}

func (s linState) mission(i int) (linPhase, int) {
	if i < 0 || i >= len(s.missions) {
		return linAbsent, 0
	}
	b := s.missions[i]
	return linPhase(b >> 4), int(b & 0x0f)
}

func (s linState) with(i int, p linPhase, claimer int) linState {
	b := []byte(s.missions)
	for len(b) <= i {
		b = append(b, 0)
	}
	b[i] = byte(p)<<4 | byte(claimer)
	s.missions = string(b)
	return s
}

// linStep is the sequential specification: the answer the node owes to in in
// state s, and the state after it.
func linStep(s linState, in linInput) (linOutput, linState) {
	record := func(p linPhase, claimer int) linOutput {
		return linOutput{Status: 200, Phase: p, Claimer: claimer, Reward: in.Reward}
	}
	refuse := func(status int, code string) linOutput { return linOutput{Status: status, Code: code} }
	if in.Kind == linReadBalance {
		return linOutput{Status: 200, Credit: s.credit[in.Who], Completed: s.completed[in.Who]}, s
	}
	phase, claimer := s.mission(in.Mission)
	if in.Kind == linCreate {
		if phase != linAbsent {
			return refuse(0, "mission index reused"), s // the node handed out an id twice
		}
		out := record(linCreated, 0)
		out.Mission = in.Mission
		return out, s.with(in.Mission, linCreated, 0)
	}
	if phase == linAbsent {
		return refuse(404, "mission_not_found"), s
	}
	switch in.Kind {
	case linClaim:
		switch phase {
		case linCreated:
			return record(linClaimed, in.Who+1), s.with(in.Mission, linClaimed, in.Who+1)
		case linClaimed:
			return refuse(409, "already_claimed"), s
		}
		return refuse(409, "invalid_state"), s
	case linComplete:
		switch {
		case phase == linCreated:
			return refuse(409, "invalid_state"), s // nobody to act for yet
		case claimer != in.Who+1:
			return refuse(403, "forbidden"), s
		case phase == linClaimed:
			return record(linCompleted, claimer), s.with(in.Mission, linCompleted, claimer)
		}
		return refuse(409, "invalid_state"), s
	case linSettle:
		if phase != linCompleted {
			return refuse(409, "invalid_state"), s
		}
		next := s.with(in.Mission, linSettled, claimer)
		next.credit[claimer-1] += in.Reward
		next.completed[claimer-1]++
		return record(linSettled, claimer), next
	case linReadMission:
		return record(phase, claimer), s
	}
	panic(fmt.Sprintf("linStep: kind %d", in.Kind))
}

var linHashSeed = maphash.MakeSeed()

// linModel checks one group per partition. An operation whose answer never
// came takes effect if the rules let it, and is a no-op if they refuse it;
// that it never reached the node at all is the linearization that places it
// after every other operation, which its infinite Return allows.
var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		groups := map[int][]porcupine.Operation{}
		var order []int
		for _, op := range history {
			g := op.Input.(linInput).Group
			if _, ok := groups[g]; !ok {
				order = append(order, g)
			}
			groups[g] = append(groups[g], op)
		}
		parts := make([][]porcupine.Operation, 0, len(order))
		for _, g := range order {
			parts = append(parts, groups[g])
		}
		return parts
	},
	Init: func() any { return linState{} },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(linInput), output.(linOutput)
		want, next := linStep(state.(linState), in)
		if out.Unknown {
			return true, next
		}
		return out == want, next
	},
	Hash: func(state any) uint64 { return maphash.Comparable(linHashSeed, state.(linState)) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		var b strings.Builder
		fmt.Fprintf(&b, "%s", in.Kind)
		switch in.Kind {
		case linCreate:
		case linReadBalance:
			fmt.Fprintf(&b, " i%d", in.Who)
		default:
			fmt.Fprintf(&b, " m%d", in.Mission)
			if in.Kind == linClaim || in.Kind == linComplete {
				fmt.Fprintf(&b, " by i%d", in.Who)
			}
		}
		b.WriteString(" → ")
		switch {
		case out.Unknown:
			b.WriteString("unknown (connection lost)")
		case out.Status != 200:
			fmt.Fprintf(&b, "%d %s", out.Status, out.Code)
		case in.Kind == linReadBalance:
			fmt.Fprintf(&b, "credit %d, %d settled", out.Credit, out.Completed)
		case in.Kind == linCreate:
			fmt.Fprintf(&b, "m%d (reward %d)", out.Mission, out.Reward)
		default:
			fmt.Fprintf(&b, "%s", out.Phase)
			if out.Claimer > 0 {
				fmt.Fprintf(&b, " by i%d", out.Claimer-1)
			}
		}
		return b.String()
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		var b strings.Builder
		for i := range len(s.missions) {
			p, c := s.mission(i)
			if p == linAbsent {
				continue
			}
			fmt.Fprintf(&b, "m%d:%s", i, p)
			if c > 0 {
				fmt.Fprintf(&b, "(i%d)", c-1)
			}
			b.WriteString(" ")
		}
		b.WriteString("| credit")
		for i := range linIdentities {
			if s.credit[i] != 0 || s.completed[i] != 0 {
				fmt.Fprintf(&b, " i%d=%d/%d", i, s.credit[i], s.completed[i])
			}
		}
		return b.String()
	},
	DescribeOperationMetadata: func(info any) string {
		if info == nil {
			return ""
		}
		return fmt.Sprint(info)
	},
}

// linOp is a hand-made operation of group 0 for the model's own tests.
func linOp(client int, call, ret int64, in linInput, out linOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// A few shorthands for the model's tests: mission 0 of group 0 with reward 7.
var (
	linM0        = linInput{Kind: linCreate, Mission: 0, Reward: 7}
	linM0Created = linOutput{Status: 200, Mission: 0, Phase: linCreated, Reward: 7}
	linLost      = linOutput{Unknown: true}
)

func linOn(kind linKind, who int) linInput {
	return linInput{Kind: kind, Mission: 0, Who: who, Reward: 7}
}

func linRecord(p linPhase, claimer int) linOutput {
	return linOutput{Status: 200, Phase: p, Claimer: claimer, Reward: 7}
}

func linRefused(status int, code string) linOutput { return linOutput{Status: status, Code: code} }

func linBalance(credit, completed int64) linOutput {
	return linOutput{Status: 200, Credit: credit, Completed: completed}
}

// linThroughCompleted is mission 0 created, claimed by i0 and completed, one
// step after another, from time 0 to 30.
func linThroughCompleted() []porcupine.Operation {
	return []porcupine.Operation{
		linOp(0, 0, 5, linM0, linM0Created),
		linOp(0, 10, 15, linOn(linClaim, 0), linRecord(linClaimed, 1)),
		linOp(0, 20, 25, linOn(linComplete, 0), linRecord(linCompleted, 1)),
	}
}

// TestLinearModelRejects feeds the checker histories that no sequential run
// of the mission state machine explains, and requires each to be found
// illegal: the checker of TestLinearizableUnderKill can fail.
func TestLinearModelRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"two claims answered 200, one after the other", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, 15, linOn(linClaim, 0), linRecord(linClaimed, 1)),
			linOp(1, 20, 25, linOn(linClaim, 1), linRecord(linClaimed, 2)),
		}},
		{"two concurrent claims answered 200", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, 20, linOn(linClaim, 0), linRecord(linClaimed, 1)),
			linOp(1, 11, 19, linOn(linClaim, 1), linRecord(linClaimed, 2)),
		}},
		{"a read after an acknowledged claim misses it", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, 15, linOn(linClaim, 0), linRecord(linClaimed, 1)),
			linOp(1, 16, 18, linOn(linReadMission, 0), linRecord(linCreated, 0)),
		}},
		{"a balance read after an acknowledged settlement misses the reward", append(linThroughCompleted(),
			linOp(0, 30, 35, linOn(linSettle, 0), linRecord(linSettled, 1)),
			linOp(1, 40, 45, linOn(linReadBalance, 0), linBalance(0, 0)),
		)},
		{"a settlement is paid twice", append(linThroughCompleted(),
			linOp(0, 30, 35, linOn(linSettle, 0), linRecord(linSettled, 1)),
			linOp(1, 36, 38, linOn(linSettle, 0), linRecord(linSettled, 1)),
		)},
		{"a settlement pays the wrong identity", append(linThroughCompleted(),
			linOp(0, 30, 35, linOn(linSettle, 0), linRecord(linSettled, 1)),
			linOp(1, 40, 45, linOn(linReadBalance, 1), linBalance(7, 1)),
		)},
		{"a mission completed by an identity that did not claim it", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, 15, linOn(linClaim, 0), linRecord(linClaimed, 1)),
			linOp(1, 20, 25, linOn(linComplete, 1), linRecord(linCompleted, 2)),
		}},
		{"a lost claim is seen to have happened, then another claim succeeds", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, linForever, linOn(linClaim, 0), linLost),
			linOp(1, 20, 25, linOn(linReadMission, 0), linRecord(linClaimed, 1)),
			linOp(1, 30, 35, linOn(linClaim, 1), linRecord(linClaimed, 2)),
		}},
		{"a lost settlement is seen, then unseen", append(linThroughCompleted(),
			linOp(0, 30, linForever, linOn(linSettle, 0), linLost),
			linOp(1, 40, 45, linOn(linReadBalance, 0), linBalance(7, 1)),
			linOp(1, 50, 55, linOn(linReadBalance, 0), linBalance(0, 0)),
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, info := porcupine.CheckOperationsVerbose(linModel, tc.ops, time.Minute)
			if res != porcupine.Illegal {
				t.Fatalf("check: %s, want %s", res, porcupine.Illegal)
			}
			path := filepath.Join(t.TempDir(), "history.html")
			if err := porcupine.VisualizePath(linModel, info, path); err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(path)
			if err != nil || !bytes.Contains(html, []byte("claim m0 by i0")) {
				t.Fatalf("visualisation %s (%d bytes, %v) does not show the history", path, len(html), err)
			}
		})
	}
}

// TestLinearModelAccepts feeds the checker histories that are linearizable,
// some only because an operation whose answer was lost may or may not have
// taken effect, or because concurrent operations may take effect in either
// order.
func TestLinearModelAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"the whole lifecycle, then the balance", append(linThroughCompleted(),
			linOp(0, 30, 35, linOn(linSettle, 0), linRecord(linSettled, 1)),
			linOp(1, 40, 45, linOn(linReadBalance, 0), linBalance(7, 1)),
			linOp(1, 50, 55, linOn(linReadBalance, 1), linBalance(0, 0)),
		)},
		{"concurrent claims, one wins", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, 20, linOn(linClaim, 0), linRefused(409, "already_claimed")),
			linOp(1, 11, 19, linOn(linClaim, 1), linRecord(linClaimed, 2)),
			linOp(2, 12, 13, linOn(linReadMission, 0), linRecord(linCreated, 0)),
		}},
		{"a balance read concurrent with the settlement sees it", append(linThroughCompleted(),
			linOp(0, 30, 40, linOn(linSettle, 0), linRecord(linSettled, 1)),
			linOp(1, 31, 32, linOn(linReadBalance, 0), linBalance(7, 1)),
			linOp(2, 33, 34, linOn(linReadMission, 0), linRecord(linSettled, 1)),
		)},
		{"a lost claim took effect", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, linForever, linOn(linClaim, 0), linLost),
			linOp(1, 20, 25, linOn(linReadMission, 0), linRecord(linClaimed, 1)),
			linOp(1, 30, 35, linOn(linComplete, 0), linRecord(linCompleted, 1)),
		}},
		{"a lost claim did not", []porcupine.Operation{
			linOp(0, 0, 5, linM0, linM0Created),
			linOp(0, 10, linForever, linOn(linClaim, 0), linLost),
			linOp(1, 20, 25, linOn(linReadMission, 0), linRecord(linCreated, 0)),
			linOp(1, 30, 35, linOn(linClaim, 1), linRecord(linClaimed, 2)),
			linOp(1, 40, 45, linOn(linReadMission, 0), linRecord(linClaimed, 2)),
		}},
		{"a lost settlement paid", append(linThroughCompleted(),
			linOp(0, 30, linForever, linOn(linSettle, 0), linLost),
			linOp(1, 40, 45, linOn(linReadBalance, 0), linBalance(7, 1)),
			linOp(1, 50, 55, linOn(linSettle, 0), linRefused(409, "invalid_state")),
		)},
		{"a lost settlement did not", append(linThroughCompleted(),
			linOp(0, 30, linForever, linOn(linSettle, 0), linLost),
			linOp(1, 40, 45, linOn(linReadBalance, 0), linBalance(0, 0)),
			linOp(1, 50, 55, linOn(linSettle, 0), linRecord(linSettled, 1)),
			linOp(1, 60, 65, linOn(linReadBalance, 0), linBalance(7, 1)),
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := porcupine.CheckOperationsTimeout(linModel, tc.ops, time.Minute); res != porcupine.Ok {
				t.Fatalf("check: %s, want %s", res, porcupine.Ok)
			}
		})
	}
}
