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
	"github.com/civnode/civnode/transparency"
)

// behindHelp is the help of --published, which restore and import share.
const behindHelp = "a directory or URL where the node's checkpoint was published (transparency publish --dir), to report how far behind it the restored chain is"

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
	cmd.Flags().StringVar(&c.published, "published", "", behindHelp)
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
	return reportBehind(ctx, m.Stdout, m.Stderr, n.Log, c.published)
}

// reportBehind prints how far behind the checkpoint published at loc, when
// given, the chain is (transparency.Behind), with a warning when observers
// saw events it lacks; a chain that contradicts the checkpoint is an error.
func reportBehind(ctx context.Context, stdout, stderr io.Writer, chain *eventlog.Log, loc string) error {
	if loc == "" {
		fmt.Fprintln(stdout, "published not compared (give --published to learn whether observers saw later events)")
		return nil
	}
	size, behind, err := transparency.Behind(ctx, chain, loc)
	if err != nil {
		return err
	}
	if behind > 0 {
		fmt.Fprintf(stdout, "published checkpoint at size %d: this chain is %d events behind it\n", size, behind)
		fmt.Fprintf(stderr, "warning: observers have seen %d events this data dir lacks. A node started on it would append other events at those seqs: a fork of the history they saw. "+
			"Import a newer export bundle (civnode import) instead, or recover the tail before it appends (docs/operations.md)\n", behind)
		return nil
	}
	fmt.Fprintf(stdout, "published checkpoint at size %d: covered by this chain\n", size)
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
