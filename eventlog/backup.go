package eventlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Backup is what a copy of the store made by Log.Backup holds.
type Backup struct {
	// Tip is the newest event in the copy, and Root the genesis event's id.
	Tip  Tip
	Root string
	// Tree is the Merkle tree head of the copy and Checkpoint its signed
	// checkpoint, so that an operator can tell an observer which history the
	// copy holds. On a mirror they are the origin's newest checkpoint the
	// copy holds, which may be of fewer events than Tip: a mirror stores the
	// origin's events before the seal that covers them.
	Tree       TreeHead
	Checkpoint []byte
}

// Backup writes a consistent copy of the store to dir, which must not exist
// yet: Pebble's own checkpoint, which hard-links the immutable tables where
// dir is on the store's file system (copies them elsewhere) and copies the
// write-ahead log up to the last commit. Commits wait while the checkpoint is
// taken (the time to link the files), and it is taken once every group
// already written has had its fsync (commit.go), so the copy ends exactly at the tip
// Backup returns, with the models, indexes and tree of that tip. The node's
// key and the other files of the data directory are the caller's to copy.
func (l *Log) Backup(dir string) (Backup, error) {
	if err := l.Healthy(); err != nil {
		return Backup{}, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	l.commitMu.Lock()
	l.unsynced.Wait() // every group applied so far is in the tip, or failed
	if err := l.Healthy(); err != nil {
		l.commitMu.Unlock()
		return Backup{}, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	tip := l.Tip()
	// A mirror's seal, read while no group commits, is of at most tip.Seq
	// events (StoreSeal takes none beyond the tip).
	var seal *Seal
	if l.ReadOnly() {
		if seal = l.storedSeal.Load(); seal == nil {
			l.commitMu.Unlock()
			return Backup{}, fmt.Errorf("%w: the mirror holds no checkpoint of the origin yet; let a mirror run complete first", ErrNotFound)
		}
	}
	err := l.db.Checkpoint(dir, pebble.WithFlushedWAL())
	l.commitMu.Unlock()
	if err != nil {
		return Backup{}, fmt.Errorf("back up the store to %s: %w", dir, err)
	}
	if seal != nil {
		head, err := OpenCheckpoint([]byte(seal.Checkpoint), l.did, l.pub)
		if err != nil {
			return Backup{}, fmt.Errorf("the mirror's stored checkpoint: %w", err)
		}
		return Backup{Tip: tip, Root: l.RootHash(), Tree: head, Checkpoint: []byte(seal.Checkpoint)}, nil
	}
	head, note, err := l.TreeCheckpointAt(int64(tip.Seq))
	if err != nil {
		return Backup{}, err
	}
	return Backup{Tip: tip, Root: l.RootHash(), Tree: head, Checkpoint: note}, nil
}
