package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
)

// publishedHelp is the help of --published, which restore and import share.
const publishedHelp = "a directory or URL where the node's chain was published (transparency publish --dir, serve --publish-dir): the new data dir is caught up to its newest tree, every event verified, or the command exits 1"

// restoreCmd is civnode restore: a data dir from a backup, verified.
type restoreCmd struct {
	m                  *Main
	g                  *globals
	dataDir, published string
}

func newRestoreCommand(m *Main, g *globals) *cobra.Command {
	c := &restoreCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "restore BACKUP --data-dir NEW",
		Short: "Make a data dir from a backup, verified before a node may start on it",
		Long:  restoreHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireTargetDataDir(c.dataDir); err != nil {
				return err
			}
			return c.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", targetDataDirHelp)
	cmd.Flags().StringVar(&c.published, "published", "", publishedHelp)
	return cmd
}

func (c *restoreCmd) run(ctx context.Context, src string) (err error) {
	m := c.m
	logger, err := m.logger(c.g)
	if err != nil {
		return err
	}
	dir, undo, err := newTargetDataDir(c.dataDir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, undo())
		}
	}()
	progress, done := m.byteProgress("restore")
	man, err := backup.Restore(src, string(dir), progress)
	done()
	if err != nil {
		return fmt.Errorf("restore %s: %w", src, err)
	}
	n, err := localnode.OpenExisting(ctx, dir, logger)
	if err != nil {
		return m.invalid(err)
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	diff, err := backup.Verify(ctx, n.Log, man, m.progress)
	if err != nil {
		return m.invalid(err)
	}
	if !diff.Same() {
		fmt.Fprintf(m.Stderr, "warning: the copied read models differed from the chain (%d missing, %d extra, %d changed keys); the ones rebuilt from the chain are live\n",
			diff.Missing, diff.Extra, diff.Changed)
	}
	fmt.Fprintf(m.Stdout, "restored %s into %s\n%s%s\ntip       seq %d, %s\n", src, dir, chainLabel(dir), man.NodeDID, man.TipSeq, man.TipID)
	if err := catchUpPublished(ctx, m.Stdout, m.Stderr, n.Log, dir, c.published); err != nil {
		return err
	}
	return markRecovered(dir, datadir.RecoveredByRestore)
}

// catchUpPublished brings a restored or imported chain up to the newest
// tree published at loc (localnode.CatchUp), and says what it did; a
// published tree the chain does not extend, or a tail that names another
// instance promoted in the node's place, is an error. Without loc it warns
// that the node cannot know what it lacks until it checks at start.
func catchUpPublished(ctx context.Context, stdout, stderr io.Writer, chain *eventlog.Log, dir datadir.Dir, loc string) error {
	if loc == "" {
		fmt.Fprintln(stdout, "published not compared: the node checks at start against serve --published and --witness")
		fmt.Fprintln(stderr, "warning: this chain was not compared with where it was published. A node started on it with neither --published nor --witness cannot know whether observers saw later events, and its first write would fork the history they saw (docs/operations.md)")
		return nil
	}
	rep, err := localnode.CatchUp(ctx, chain, dir, loc)
	if err != nil {
		return fmt.Errorf("catch up from %s: %w", loc, err)
	}
	if rep.SupersededBy != "" {
		return fmt.Errorf("catch up from %s: the published chain names another instance (%s) promoted in this node's place; this data dir is of the old node, which must never write again: restore the new node's backup, or follow it with a mirror (docs/operations.md)", loc, rep.SupersededBy)
	}
	if rep.Events > 0 {
		fmt.Fprintf(stdout, "caught up %d events from %s: tip seq %d, the published tree of %d events\n", rep.Events, loc, chain.Tip().Seq, rep.Published.Size)
		return nil
	}
	fmt.Fprintf(stdout, "published checkpoint at size %d: covered by this chain\n", rep.Published.Size)
	return nil
}

// markRecovered leaves the mark a node with witnesses waits on.
func markRecovered(dir datadir.Dir, how string) error {
	if err := dir.MarkRecovered(how); err != nil {
		return fmt.Errorf("mark the data dir as made by %s: %w", how, err)
	}
	return nil
}

// targetDataDirHelp is the help of --data-dir for restore and import, which
// make a data dir rather than use one.
const targetDataDirHelp = "the new data dir to make: it must not exist or be empty (required)"

// requireTargetDataDir refuses a restore or import without --data-dir. Unlike
// the commands that use a data dir, they take neither $CIVNODE_DATA_DIR nor
// ~/.civnode: a new data dir goes where the operator names it, not where a
// default happens to point.
func requireTargetDataDir(flag string) error {
	if flag == "" {
		return usageErrorf("--data-dir is required: the new data dir to make (it must not exist or be empty)")
	}
	return nil
}

// newTargetDataDir makes --data-dir, absolute, a new data dir, refusing one
// that holds anything, for restore and import; undo removes what was put
// there, for a run that failed.
func newTargetDataDir(flag string) (dir datadir.Dir, undo func() error, err error) {
	abs, err := filepath.Abs(flag)
	if err != nil {
		return "", nil, fmt.Errorf("data dir: %w", err)
	}
	dir = datadir.Dir(abs)
	undo, err = backup.NewTarget(string(dir))
	return dir, undo, err
}
