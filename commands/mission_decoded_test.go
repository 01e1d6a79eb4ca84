package commands_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/civnode/civnode/eventlog/events"
)

// TestMissionCreatedDecodedIsItsJSON: the value a create hands the read
// models' fold (eventlog.Draft.Decoded, so that the sequencer need not decode
// the payload again) is exactly what decoding the signed payload gives, the
// value a replay folds. Each shape of input is covered: optional fields set
// and not, a payload that canonicalisation rewrites, text that JSON escapes,
// and a publisher of each kind.
func TestMissionCreatedDecodedIsItsJSON(t *testing.T) {
	n := newMissionNode(t)
	n.agent("pub", "order", "broker", true)
	ctx := context.Background()
	s := func(v string) *string { return &v }
	for i, tc := range []struct {
		publisher, kind string
		title           string
		zone, role      *string
		faction         *string
		payload         string
	}{
		{"pub", "agent", "Survey", nil, nil, nil, ``},
		{"pub", "organization", "Survey <&> \u2028 \"quoted\" é", s("north-dock"), s("enforcer"), s("order"), ` {"b": [1, 2.50, -0, 1e2], "a": "<&>", "c": {"z": null, "y": true}} `},
		{"genesis", "planetary_government", "Escort", s("z"), nil, s("order"), `{"escorts":2,"route":["north-dock","refinery"]}`},
		{"genesis", "planetary_government", "Escort", nil, s("enforcer"), nil, `null`},
	} {
		in := createInput(tc.publisher, tc.kind)
		in.Title, in.ZoneID, in.RequiredRole, in.RequiredFaction = tc.title, tc.zone, tc.role, tc.faction
		in.Payload = json.RawMessage(tc.payload)
		res, err := n.mission.Create(ctx, owner, in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(res.Events) != 1 {
			t.Fatalf("case %d: events = %+v", i, res.Events)
		}
		ev := res.Events[0]
		got, ok := ev.Decoded().(events.MissionCreated)
		if !ok {
			t.Fatalf("case %d: Decoded() = %T, want events.MissionCreated", i, ev.Decoded())
		}
		var want events.MissionCreated
		if err := json.Unmarshal(ev.Payload, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("case %d: Decoded()\n %+v\nwant what the payload decodes to\n %+v", i, got, want)
		}
	}
}
