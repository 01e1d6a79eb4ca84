package bench

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/civnode/civnode/eventlog/events"
)

// TestEventMessageIsAnAppendPhaseEvent: the signing limit is measured over the
// signed bytes of a mission.created as the append phase appends it, not over a
// shorter stand-in.
func TestEventMessageIsAnAppendPhaseEvent(t *testing.T) {
	msg, err := eventMessage(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var u struct {
		Type      string          `json:"type"`
		Seq       uint64          `json:"seq"`
		Payload   json.RawMessage `json:"payload"`
		ID        *string         `json:"id"`
		Signature *string         `json:"signature"`
	}
	if err := json.Unmarshal(msg, &u); err != nil {
		t.Fatalf("the message is no JSON object: %v\n%s", err, msg)
	}
	if u.Type != events.TypeMissionCreated || u.ID != nil || u.Signature != nil {
		t.Errorf("the message is not the signed bytes of a mission.created: %s", msg)
	}
	var got, want events.MissionCreated
	if err := json.Unmarshal(u.Payload, &got); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(createdPayload(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	got.MissionID, want.MissionID = "", "" // random per call
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("payload\n%s\nwant the append phase's\n%s", g, w)
	}
	if len(msg) < 700 {
		t.Errorf("the message is %d bytes; an append phase event signs 800-odd", len(msg))
	}
	t.Logf("%d bytes", len(msg))
}
