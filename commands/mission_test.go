package commands_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/civnode/civnode/commands"
)

func TestNewMissionNeedsItsModels(t *testing.T) {
	n := newMissionNode(t)
	for _, opts := range []commands.MissionOptions{
		{Missions: n.mD, Identities: n.idsD, Profiles: n.idsD},
		{Log: n.log, Identities: n.idsD, Profiles: n.idsD},
		{Log: n.log, Missions: n.mD, Profiles: n.idsD},
		{Log: n.log, Missions: n.mD, Identities: n.idsD},
	} {
		if _, err := commands.NewMission(opts); err == nil {
			t.Errorf("NewMission(%+v) accepted", opts)
		}
	}
}

// TestMissionPayloadIsStoredCanonical: the payload is stored as RFC 8785 JSON;
// one the event log could not store is refused up front, as 400 payload.
func TestMissionPayloadIsStoredCanonical(t *testing.T) {
	n := newMissionNode(t)
	n.agent("pub", "order", "broker", true)
	ctx := context.Background()
	for _, tc := range []struct{ payload, stored string }{
		{``, `{}`},
		{`null`, `{}`},
		{` {"b": [1, 2.50], "a": "<&>"} `, `{"a":"<&>","b":[1,2.5]}`},
	} {
		in := createInput("pub", "agent")
		in.Payload = json.RawMessage(tc.payload)
		res, err := n.mission.Create(ctx, owner, in)
		if err != nil {
			t.Fatalf("payload %q: %v", tc.payload, err)
		}
		rec, _ := found(n.missions.Mission(res.MissionID))
		if string(rec.Payload) != tc.stored {
			t.Errorf("payload %q stored as %s, want %s", tc.payload, rec.Payload, tc.stored)
		}
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"n":1e400}`, `[]`, `"x"`, `{"s":"\ud800"}`} {
		in := createInput("pub", "agent")
		in.Payload = json.RawMessage(bad)
		tip := n.log.Tip().Seq
		_, err := n.mission.Create(ctx, owner, in)
		(&idNode{log: n.log}).refused(t, err, tip, commands.KindInvalid, "invalid_field", "payload")
	}
}

// TestMissionCommandsRefuseObservers: an observer actor is refused by every
// command before anything else.
func TestMissionCommandsRefuseObservers(t *testing.T) {
	n := newMissionNode(t)
	n.agent("pub", "order", "broker", true)
	ctx := context.Background()
	res, err := n.mission.Create(ctx, owner, createInput("pub", "organization"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 1 || res.Events[0].Type != "mission.created" {
		t.Fatalf("events = %+v", res.Events)
	}
	tip := n.log.Tip().Seq
	check := func(err error) {
		t.Helper()
		(&idNode{log: n.log}).refused(t, err, tip, commands.KindForbidden, "forbidden", "")
	}
	_, err = n.mission.Create(ctx, observer, createInput("pub", "organization"))
	check(err)
	_, err = n.mission.Claim(ctx, observer, res.MissionID, commands.ClaimMissionInput{Claimer: "pub"})
	check(err)
	r := "x"
	_, err = n.mission.Complete(ctx, observer, res.MissionID, commands.CompleteMissionInput{Result: &r})
	check(err)
	_, err = n.mission.Settle(ctx, observer, res.MissionID, commands.SettleMissionInput{})
	check(err)
}
