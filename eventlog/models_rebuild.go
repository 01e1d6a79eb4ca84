package eventlog

import (
	"bytes"
	"context"
	"fmt"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/cockroachdb/pebble/v2"
)

// The model state lives in one of two key spaces; meta key "models" names the
// live one. A rebuild folds the chain into the other space, then makes it live
// and drops the old one in a single batch, so the node always has one complete
// set of models, whether a rebuild finished, was interrupted, or never ran.
const (
	spaceModelsA byte = 0x07
	spaceModelsB byte = 0x08
)

var metaModelsKey = []byte{spaceMeta, 'm', 'o', 'd', 'e', 'l', 's'}

// A rebuild commits every rebuildBatchEvents events or rebuildBatchBytes bytes
// of model writes, whichever comes first, recording its progress in the same
// batch, so an interrupted rebuild resumes where its last batch ended.
var (
	rebuildBatchEvents = 8192 // a variable so tests can interrupt a rebuild between batches
	rebuildBatchBytes  = 16 << 20
)

// RebuildProgress reports a rebuild of the read models: done of total events.
type RebuildProgress func(done, total uint64)

func otherSpace(p byte) byte {
	if p == spaceModelsA {
		return spaceModelsB
	}
	return spaceModelsA
}

func (l *Log) liveModels() *modelSpace { return l.live.Load() }

// openModels makes the models current before the log takes writes: it catches
// up a live space whose version matches and whose watermark is behind the chain,
// and otherwise rebuilds into the other space, resuming an interrupted rebuild.
func (l *Log) openModels(progress RebuildProgress) error {
	if l.models == nil {
		return nil
	}
	live := spaceModelsA
	v, ok, err := dbGet(l.db, metaModelsKey)
	if err != nil {
		return err
	}
	if ok && len(v) == 1 && (v[0] == spaceModelsA || v[0] == spaceModelsB) {
		live = v[0]
	}
	sp := newModelSpace(l.db, live, l.modelCache)
	version, applied, err := l.spaceState(sp)
	if err != nil {
		return err
	}
	want := l.models.Version()
	if version == want {
		if applied < l.tip.Seq {
			l.log.Info("read models are behind the chain; catching up", logkey.AppliedSeq, applied, logkey.TipSeq, l.tip.Seq)
			if err := l.foldRange(context.Background(), sp, applied+1, l.tip.Seq, progress); err != nil {
				return err
			}
		}
		l.renewDurable(sp)
		l.live.Store(sp)
		return nil
	}
	switch {
	case version == "" && l.tip.Seq <= 1:
		// A new store (Open has just written its genesis, or, to ingest,
		// nothing): no models were stored, and nothing changed.
	case version == "":
		l.log.Info("read models not stored; building them from the chain", logkey.Version, want, logkey.TipSeq, l.tip.Seq)
	default:
		l.log.Info("read model schema changed; rebuilding from the chain", logkey.StoredVersion, version, logkey.Version, want, logkey.TipSeq, l.tip.Seq)
	}
	next, err := l.rebuildInto(context.Background(), otherSpace(live), true, progress)
	if err != nil {
		return err
	}
	return l.swapModels(live, next)
}

// spaceState reads a space's version and watermark ("" and 0 when empty).
func (l *Log) spaceState(sp *modelSpace) (string, uint64, error) {
	v, _, err := dbGet(l.db, sp.key(modelVersionKey))
	if err != nil {
		return "", 0, err
	}
	a, ok, err := dbGet(l.db, sp.key(modelAppliedKey))
	if err != nil {
		return "", 0, err
	}
	var applied uint64
	if ok && len(a) == 8 {
		applied = u64(a)
	}
	return string(v), applied, nil
}

// rebuildInto folds the chain into space prefix up to the tip. With resume, a
// space left by an interrupted rebuild of the same version continues from its
// watermark; anything else there is discarded first.
func (l *Log) rebuildInto(ctx context.Context, prefix byte, resume bool, progress RebuildProgress) (*modelSpace, error) {
	sp := newModelSpace(l.db, prefix, l.modelCache)
	version, applied, err := l.spaceState(sp)
	if err != nil {
		return nil, err
	}
	from := uint64(1)
	if resume && version == l.models.Version() && applied > 0 {
		from = applied + 1
		l.log.Info("resuming an interrupted read model rebuild", logkey.AppliedSeq, applied)
	} else if err := withFatal(func() error {
		return l.db.DeleteRange([]byte{prefix}, []byte{prefix + 1}, pebble.Sync)
	}); err != nil {
		return nil, fmt.Errorf("clear read model space: %w", err)
	}
	if err := l.foldRange(ctx, sp, from, l.tip.Seq, progress); err != nil {
		return nil, err
	}
	return sp, nil
}

// swapModels makes next live and drops old, atomically.
func (l *Log) swapModels(old byte, next *modelSpace) error {
	b := l.db.NewBatch()
	defer b.Close()
	b.Set(metaModelsKey, []byte{next.prefix}, nil)
	b.DeleteRange([]byte{old}, []byte{old + 1}, nil)
	if err := withFatal(func() error { return b.Commit(pebble.Sync) }); err != nil {
		return fmt.Errorf("switch read models: %w", err)
	}
	l.renewDurable(next)
	l.live.Store(next)
	return nil
}

// foldRange folds events from..to into sp in batches, each recording the
// version and the last seq it holds.
func (l *Log) foldRange(ctx context.Context, sp *modelSpace, from, to uint64, progress RebuildProgress) error {
	version := []byte(l.models.Version())
	var writes, scratch []modelWrite
	size, n := 0, 0
	flush := func(last uint64, opts *pebble.WriteOptions) error {
		b := l.db.NewBatch()
		defer b.Close()
		sp.apply(b, writes)
		b.Set(sp.key(modelVersionKey), version, nil)
		b.Set(sp.key(modelAppliedKey), appendU64(nil, last), nil)
		if err := withFatal(func() error { return b.Commit(opts) }); err != nil {
			return fmt.Errorf("write read models at seq %d: %w", last, err)
		}
		sp.mu.Lock()
		clear(sp.overlay)
		clear(sp.cache)
		sp.cacheBytes = 0
		sp.settled++
		sp.mu.Unlock()
		writes, size, n = writes[:0], 0, 0
		return nil
	}
	if from <= to {
		err := l.Scan(from, to, func(ev *Event) error {
			tx, err := foldInto(l.models, sp, ev, scratch)
			if err != nil {
				return err
			}
			for _, w := range tx.writes {
				size += len(w.key) + len(w.value)
			}
			scratch = sp.stage(tx, &writes)
			n++
			if n >= rebuildBatchEvents || size >= rebuildBatchBytes {
				if err := flush(ev.Seq, pebble.NoSync); err != nil {
					return err
				}
			}
			if progress != nil {
				progress(ev.Seq, to)
			}
			return ctx.Err()
		})
		if err != nil {
			return err
		}
	}
	return flush(to, pebble.Sync)
}

// ModelDiff is what a rebuild found different from the models it replaced.
type ModelDiff struct {
	// Keys is how many keys the rebuilt models hold.
	Keys uint64
	// Missing keys were only in the old models, Extra keys only in the rebuilt
	// ones, and Changed keys in both with different values.
	Missing, Extra, Changed uint64
	// Examples names up to ten differing keys.
	Examples []string
}

// Same reports whether the rebuilt models equal the old ones.
func (d ModelDiff) Same() bool { return d.Missing == 0 && d.Extra == 0 && d.Changed == 0 }

// RebuildModels folds the whole chain into a fresh key space, compares it with
// the live models, makes it live and returns the differences. It is the
// operation behind civnode replay and must not run while events are appended.
func (l *Log) RebuildModels(ctx context.Context, progress RebuildProgress) (ModelDiff, error) {
	old := l.liveModels()
	if old == nil {
		return ModelDiff{}, errNoModels
	}
	next, err := l.rebuildInto(ctx, otherSpace(old.prefix), false, progress)
	if err != nil {
		return ModelDiff{}, err
	}
	diff, err := l.diffSpaces(old.prefix, next.prefix)
	if err != nil {
		return ModelDiff{}, err
	}
	return diff, l.swapModels(old.prefix, next)
}

// diffSpaces walks both spaces in key order, side by side.
func (l *Log) diffSpaces(oldP, newP byte) (ModelDiff, error) {
	var d ModelDiff
	iter := func(p byte) (*pebble.Iterator, error) {
		return l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	}
	a, err := iter(oldP)
	if err != nil {
		return d, fmt.Errorf("read the old read models: %w", l.readFault(err))
	}
	defer a.Close()
	b, err := iter(newP)
	if err != nil {
		return d, fmt.Errorf("read the rebuilt read models: %w", l.readFault(err))
	}
	defer b.Close()
	note := func(kind string, key []byte) {
		if len(d.Examples) < 10 {
			d.Examples = append(d.Examples, fmt.Sprintf("%s %q", kind, key))
		}
	}
	// Derived state is its owner's to compare, not a fold's (DerivedKey).
	derived := func(it *pebble.Iterator, valid bool) bool {
		if valid && len(it.Key()) > 1 && it.Key()[1] == derivedByte {
			return it.SeekGE([]byte{it.Key()[0], derivedByte + 1})
		}
		return valid
	}
	va, vb := derived(a, a.First()), derived(b, b.First())
	for va || vb {
		var c int
		switch {
		case !va:
			c = 1
		case !vb:
			c = -1
		default:
			c = bytes.Compare(a.Key()[1:], b.Key()[1:])
		}
		switch {
		case c < 0:
			d.Missing++
			note("missing", a.Key()[1:])
			va = derived(a, a.Next())
		case c > 0:
			d.Extra++
			d.Keys++
			note("extra", b.Key()[1:])
			vb = derived(b, b.Next())
		default:
			d.Keys++
			if !bytes.Equal(a.Value(), b.Value()) {
				d.Changed++
				note("changed", a.Key()[1:])
			}
			va, vb = derived(a, a.Next()), derived(b, b.Next())
		}
	}
	if err := a.Error(); err != nil {
		return d, fmt.Errorf("read the old read models: %w", l.readFault(err))
	}
	if err := b.Error(); err != nil {
		return d, fmt.Errorf("read the rebuilt read models: %w", l.readFault(err))
	}
	return d, nil
}
