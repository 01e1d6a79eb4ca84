package localnode

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// recordPromoted appends node.promoted, the first event a promoted standby
// signs, when dir was made by civnode promote (its recovered mark says so)
// and the chain holds no node.promoted of dir's instance yet. It runs once
// the fork guard first lets the chain append, before anything else can, and
// is safe to run again: a node stopped after the event and before the mark
// was cleared finds its own node.promoted and appends no second one. It
// leaves the mark alone; the fork guard clears it.
func recordPromoted(ctx context.Context, chain *eventlog.Log, dir datadir.Dir) error {
	how, err := dir.Recovered()
	if err != nil || how != datadir.RecoveredByPromote {
		return err
	}
	instance, err := dir.InstanceID()
	if err != nil {
		return err
	}
	recorded, err := promotedBy(chain, instance)
	if err != nil || recorded {
		return err
	}
	size := chain.TreeSize()
	// Not ctx alone: a stop that lands now must not leave a promoted node
	// whose chain never says so once the mark is cleared.
	_, err = chain.AppendHeld(context.WithoutCancel(ctx), eventlog.Draft{Type: events.TypeNodePromoted,
		Payload: events.NodePromoted{Instance: instance, TreeSize: size}})
	if err != nil {
		return fmt.Errorf("append %s: %w", events.TypeNodePromoted, err)
	}
	return nil
}

// promotedBy reports whether the chain holds a node.promoted of instance,
// read through the log's type index, so only the chain's promotions are
// read, however long the chain.
func promotedBy(chain *eventlog.Log, instance string) (bool, error) {
	found := false
	_, err := chain.QueryRaw(context.Background(), eventlog.Query{Type: events.TypeNodePromoted, Limit: 1 << 20},
		func(_ uint64, raw []byte) (bool, error) {
			var ev struct {
				Payload events.NodePromoted `json:"payload"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				return false, err
			}
			found = ev.Payload.Instance == instance
			return !found, nil
		})
	return found, err
}

// supersededAtOpen is the instance another node.promoted in the chain names,
// when the chain's newest node.promoted is not dir's own: a node that caught
// up past it once, then stopped, must stay superseded at every later start,
// not only on the catch-up that met it. A data dir promote made, whose own
// node.promoted is not recorded yet, is the newest instance and is not
// superseded by the promotions before it.
func supersededAtOpen(chain *eventlog.Log, dir datadir.Dir) (string, error) {
	instance, err := dir.InstanceID()
	if err != nil {
		return "", err
	}
	newest, err := newestPromoted(chain)
	if err != nil || newest == "" || newest == instance {
		return "", err
	}
	how, err := dir.Recovered()
	if err != nil {
		return "", err
	}
	if how == datadir.RecoveredByPromote {
		mine, err := promotedBy(chain, instance)
		if err != nil || !mine {
			return "", err
		}
	}
	return newest, nil
}

// newestPromoted is the instance the chain's newest node.promoted names, ""
// when it holds none.
func newestPromoted(chain *eventlog.Log) (string, error) {
	var newest string
	_, err := chain.QueryRaw(context.Background(), eventlog.Query{Type: events.TypeNodePromoted, Limit: 1 << 20},
		func(_ uint64, raw []byte) (bool, error) {
			var ev struct {
				Payload events.NodePromoted `json:"payload"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				return false, err
			}
			newest = ev.Payload.Instance
			return true, nil
		})
	return newest, err
}

// AdoptPromotedInstance gives a data dir rebuilt from the chain alone
// (civnode import), which has no instance id yet, the instance the chain's
// newest node.promoted names: the imported node continues the instance that
// signed the chain's tail, as a restore of that instance's backup would, and
// is not taken for a node that instance superseded. A chain without
// node.promoted leaves the id to be made at first start.
func AdoptPromotedInstance(chain *eventlog.Log, dir datadir.Dir) error {
	newest, err := newestPromoted(chain)
	if err != nil || newest == "" {
		return err
	}
	_, err = dir.AdoptInstanceID(newest)
	return err
}
