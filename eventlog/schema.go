package eventlog

import (
	"errors"
	"fmt"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/cockroachdb/pebble/v2"
)

// checkSchema reads the store's layout version and moves a store of an older
// layout to this one; a store of a layout this build does not know is refused,
// so that an older build never writes into a newer store.
//
// Schema 1 kept an id → seq index (0x02 <id> → seq). Nothing read it but the
// tail check, and its key, a SHA-256, was the one random key of every append:
// each memtable flush overlapped the whole index in Lbase, so compactions
// rewrote it again and again, more the longer the history (docs/benchmarks.md,
// "A store without a random key"). Schema 2 has no such index. The move is one
// synced batch, a range deletion of the space and the new version, so a crash
// leaves the store in one layout or the other.
func (l *Log) checkSchema() error {
	v, closer, err := l.db.Get(metaSchemaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil // an empty store: the genesis batch writes the version
	}
	if err != nil {
		return fmt.Errorf("read schema version: %w", l.readFault(err))
	}
	ver := string(v)
	closer.Close()
	switch ver {
	case schemaVersion:
		return nil
	case "1":
		b := l.db.NewBatch()
		defer b.Close()
		b.DeleteRange([]byte{spaceRetiredID}, []byte{spaceRetiredID + 1}, nil)
		b.Set(metaSchemaKey, []byte(schemaVersion), nil)
		if err := b.Commit(pebble.Sync); err != nil {
			return fmt.Errorf("move the store to schema %s: %w", schemaVersion, storeFault(err))
		}
		l.log.Info("moved the store to schema "+schemaVersion+": dropped the id index", logkey.From, ver)
		return nil
	default:
		return fmt.Errorf("open event log: schema version %q, want %q", ver, schemaVersion)
	}
}
