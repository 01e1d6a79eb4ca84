package eventlog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

// ChainNodeDID returns the node_did of the genesis event of the store in dir,
// or "" when there is no store there or it holds no event. It needs no node key
// and writes nothing: Pebble is opened read-only, so it is safe to call on a
// data dir whose key is lost, to say whose chain it holds. The event is not
// verified; Open does that.
func ChainNodeDID(dir string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("find the store: %w", err)
	}
	db, err := pebble.Open(dir, &pebble.Options{
		ReadOnly: true,
		Logger:   pebbleLogger{slog.New(slog.DiscardHandler)},
		// The read's own error reports a damaged block; see corrupt.go.
		EventListener: &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}},
	})
	if errors.Is(err, pebble.ErrDBDoesNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("open the store read-only: %w", storeFault(err))
	}
	defer db.Close()
	v, closer, err := db.Get(eventKey(1))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the genesis event: %w", storeFault(err))
	}
	defer closer.Close()
	ev, err := decodeStored(v)
	if err != nil {
		return "", chainErr(ErrCorrupt, 1, "%v", err)
	}
	if ev.NodeDID == "" {
		return "", chainErr(ErrCorrupt, 1, "the genesis event names no node_did")
	}
	return ev.NodeDID, nil
}
