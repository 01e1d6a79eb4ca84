package eventlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// DerivedWrites are writes to the live read-model space made outside the
// folds, for state the node derives from the models off the write path (the
// state tree over the records). They share the models' key space, so a
// ModelView shows them beside the records they were derived from, and a
// rebuild of the models drops them with the rest, for their owner to derive
// again.
//
// Their keys lie under a byte of their own in the space (DerivedKey), which
// a fold writes only through ModelTxn.SetDerived (the changes the owner
// consumes) and no rebuild compares: the folds' overlay and cache never see
// these writes, and replay's comparison of the rebuilt models with
// the old ones is a comparison of folds. A commit is one atomic Pebble
// batch, not synced on its own: it becomes durable with the next event's
// fsync (one write-ahead log serves both) or at Close, and a crash before
// that loses it whole, never in part.
type DerivedWrites struct {
	l     *Log
	space *modelSpace
	b     *pebble.Batch
}

// derivedByte starts every derived key in the model space; 0 is the space's
// own meta (version, applied seq).
const derivedByte = 0x01

// DerivedKey is the model-space key under which DerivedWrites keeps key, for
// reading it back through a ModelView (Get, Scan).
func DerivedKey(key []byte) []byte { return append([]byte{derivedByte}, key...) }

// DerivedWrites starts a batch of derived writes to the live model space.
// Commit or Close it.
func (l *Log) DerivedWrites() (*DerivedWrites, error) {
	sp := l.liveModels()
	if sp == nil {
		return nil, errNoModels
	}
	return &DerivedWrites{l: l, space: sp, b: l.db.NewBatch()}, nil
}

// Set writes value under key (DerivedKey(key) in the space).
func (w *DerivedWrites) Set(key, value []byte) error {
	return w.b.Set(w.space.key(DerivedKey(key)), value, nil)
}

// Delete removes key.
func (w *DerivedWrites) Delete(key []byte) error {
	return w.b.Delete(w.space.key(DerivedKey(key)), nil)
}

// DeleteRange removes every key in [lower, upper), with one tombstone.
func (w *DerivedWrites) DeleteRange(lower, upper []byte) error {
	return w.b.DeleteRange(w.space.key(DerivedKey(lower)), w.space.key(DerivedKey(upper)), nil)
}

// Len is the number of writes in the batch.
func (w *DerivedWrites) Len() int { return int(w.b.Count()) }

// Commit applies the batch at once. It fails with ErrClosed after Close,
// ErrFailed when the log has failed, and ErrModelsReplaced when a rebuild
// made another model space live since the batch began: what it derived is
// gone with the old space.
func (w *DerivedWrites) Commit() error {
	defer w.Close()
	l := w.l
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.Healthy(); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if l.liveModels() != w.space {
		return ErrModelsReplaced
	}
	if err := withFatal(func() error { return l.db.Apply(w.b, pebble.NoSync) }); err != nil {
		l.fail(err)
		return fmt.Errorf("%w: derived writes: %w", ErrFailed, err)
	}
	return nil
}

// Close drops the batch if it was not committed. Closing twice is harmless.
func (w *DerivedWrites) Close() {
	if w.b != nil {
		_ = w.b.Close()
		w.b = nil
	}
}

// DerivedView is a view of the live model space as Pebble holds it now, for
// the owner of derived state, which must read its own last commit whether or
// not an event has been made durable since (a ModelView shows it only after
// the next one). Folded records in it may not be durable yet: read through it
// only what the folds wrote at or below a seq a ModelView has shown durable,
// and what DerivedWrites wrote. Close it when done.
func (l *Log) DerivedView() (*ModelView, error) {
	sp := l.liveModels()
	if sp == nil {
		return nil, errNoModels
	}
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	return &ModelView{shared: l.newDurable(sp)}, nil
}

// HasModels reports whether the log was opened with read models
// (Options.Models): a log without them keeps no derived state either.
func (l *Log) HasModels() bool { return l.models != nil }
