package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/civnode/civnode/eventlog"
)

// Bars draws a progress bar for a walk of total events, as the CLI does on
// a terminal: it returns the callback (nil for none) and a function that
// removes the bar.
type Bars func(desc string, total int64) (func(seq uint64), func())

// Verify checks a restored store before a node may start on it: that its
// chain ends at the tip of man, the backup's manifest, and that its tree is
// the one the manifest's tree_root and signed checkpoint name (ErrManifest
// otherwise); then it walks the whole chain of l and its tree, and rebuilds
// the read models from the chain and returns how the ones that came with the
// backup differed (the rebuilt ones are live). A chain that does not verify
// is the log's ChainError.
func Verify(ctx context.Context, l *eventlog.Log, man Manifest, bars Bars) (eventlog.ModelDiff, error) {
	if tip := l.Tip(); tip.Seq != man.TipSeq || tip.ID != man.TipID || l.NodeDID() != man.NodeDID {
		return eventlog.ModelDiff{}, fmt.Errorf("the restored chain ends at seq %d (%s) of %s, the manifest says seq %d (%s) of %s",
			tip.Seq, tip.ID, l.NodeDID(), man.TipSeq, man.TipID, man.NodeDID)
	}
	if err := checkTree(l, man); err != nil {
		return eventlog.ModelDiff{}, err
	}
	progress, done := bars("verify", int64(l.Tip().Seq))
	_, err := l.Verify(ctx, progress)
	done()
	if err != nil {
		return eventlog.ModelDiff{}, err
	}
	rebuilt, done := bars("rebuild", int64(l.Tip().Seq))
	var onRebuild eventlog.RebuildProgress
	if rebuilt != nil {
		onRebuild = func(seq, _ uint64) { rebuilt(seq) }
	}
	diff, err := l.RebuildModels(ctx, onRebuild)
	done()
	if err != nil {
		return eventlog.ModelDiff{}, fmt.Errorf("rebuild read models: %w", err)
	}
	return diff, nil
}

// NewTarget refuses a data dir that holds anything and creates it (0700)
// when missing. The function it returns removes what was put there since,
// for a restore or import that failed: the directory itself if NewTarget
// made it.
func NewTarget(dir string) (undo func() error, err error) {
	return newTarget(dir, "restore and import make a new data dir")
}

// newTarget is NewTarget, refusing a directory that holds anything with hint.
func newTarget(dir, hint string) (undo func() error, err error) {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		return func() error { return os.RemoveAll(dir) }, nil
	case err != nil:
		return nil, err
	case len(ents) > 0:
		return nil, fmt.Errorf("%s is not empty; %s", dir, hint)
	}
	return func() error {
		ents, err := os.ReadDir(dir)
		for _, e := range ents {
			err = errors.Join(err, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
		return err
	}, nil
}
