package projections

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog"
)

// fold is the part of Apply every model shares: an event at or below the last
// seq applied is ignored (feeding an event twice is harmless), the model's own
// handler folds the rest, and an event the handler cannot apply changes nothing,
// is counted in skipped and reported. A handler returns errNotOurs for an event
// that is none of its business, including types it does not fold.
func fold(ev *eventlog.Event, seq, skipped *uint64, handle func(*eventlog.Event) error) error {
	if ev.Seq <= *seq {
		return nil
	}
	*seq = ev.Seq
	err := handle(ev)
	if err == nil || errors.Is(err, errNotOurs) {
		return nil
	}
	*skipped++
	return fmt.Errorf("apply %s at seq %d: %w", ev.Type, ev.Seq, err)
}

// errNotOurs marks an event a model does not fold: another model's type, or an
// event of a shared type that is about something else, such as a payment.settled
// without a mission.
var errNotOurs = errors.New("not this model's event")

func decodePayload(ev *eventlog.Event, v any) error {
	if err := json.Unmarshal(ev.Payload, v); err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	return nil
}
