package projections

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog"
)

// Version is the layout of the state the models keep in the log's model space.
// Change it with any change to a key or a stored value, or to what a fold
// makes of an event: the node then rebuilds every model from the chain at start.
const Version = "5"

// Folder folds the chain into every read model; it is the eventlog.Folder a
// node opens its log with. It holds no state: everything lives in the model
// space, written in the batch of the event it comes from.
type Folder struct {
	// State records the state map's changes for the state tree
	// (statemap_changes.go): on for a node that commits to its state, and
	// for a mirror or a replay that checks the commitments.
	State bool
}

var _ eventlog.Folder = Folder{}

// Version is the models' layout (Version); with the state map's changes,
// another, so that turning them on or off rebuilds the models: a tree needs
// every change from the chain's start. The suffix also names the layout of
// the state tree's records (statemap's Storage), which a rebuild rewrites.
func (f Folder) Version() string {
	if f.State {
		return Version + "+state7"
	}
	return Version
}

// Fold applies ev to every model, in the order of Models. Apply is deterministic: the state depends only
// on the events folded, in seq order. A model that cannot apply an event (a
// malformed payload, a step its state machine forbids) changes nothing and
// counts the event among its skipped ones; the chain holds no such event when
// only civnode's commands wrote it. Only a failure of the store is an error,
// and it fails the log.
func (f Folder) Fold(tx *eventlog.ModelTxn, ev *eventlog.Event) error {
	if err := foldModels(tx, ev); err != nil {
		return err
	}
	if f.State {
		return foldStateChanges(tx, ev)
	}
	return nil
}

func foldModels(tx *eventlog.ModelTxn, ev *eventlog.Event) error {
	for _, m := range models {
		mark := tx.Mark()
		err := m.fold(tx, ev)
		if err == nil || errors.Is(err, errNotOurs) {
			continue
		}
		tx.Rollback(mark)
		if errors.Is(err, errStore) {
			return fmt.Errorf("apply %s at seq %d: %w", ev.Type, ev.Seq, err)
		}
		if err := add(tx, m.skipped, 1); err != nil {
			return err
		}
	}
	return nil
}

func decodePayload(ev *eventlog.Event, v any) error {
	if err := json.Unmarshal(ev.Payload, v); err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	return nil
}

// payloadOf returns ev's payload as a T: the value the appending command
// encoded it from (eventlog.Draft.Decoded) when the event comes from the
// sequencer, decoded from its JSON otherwise.
func payloadOf[T any](ev *eventlog.Event) (T, error) {
	if v, ok := ev.Decoded().(T); ok {
		return v, nil
	}
	var v T
	return v, decodePayload(ev, &v)
}

// skipped reads a skipped-event counter.
func skipped(src Source, k []byte) (uint64, error) {
	v, err := view(src)
	if err != nil {
		return 0, err
	}
	defer v.Close()
	n, err := counter(v, k)
	return uint64(n), err
}
