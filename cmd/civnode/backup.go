package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/admin"
	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
)

// backupCmd is civnode backup: a consistent copy of a node's data dir, or a
// mirror's.
type backupCmd struct{ owner }

func newBackupCommand(m *Main, g *globals) *cobra.Command {
	c := &backupCmd{owner{m: m, g: g}}
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Copy a node's data dir, consistent at one tip, into a new directory",
		Long:  backupHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE:  func(cmd *cobra.Command, args []string) error { return c.run(cmd.Context(), args[0]) },
	}
	c.flags(cmd.Flags())
	return cmd
}

func (c *backupCmd) run(ctx context.Context, dest string) (err error) {
	m := c.m
	logger, err := m.logger(c.g)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(c.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	if ents, err := os.ReadDir(dest); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s is not empty; give a new directory", dest)
	}
	snap, err := admin.Snapshot(ctx, dir, c.addr, logger, localnode.WithCAFile(c.caFile))
	if err != nil {
		return err
	}
	defer func() {
		if rerr := snap.Remove(); rerr != nil && err == nil {
			err = fmt.Errorf("remove the snapshot %s: %w", snap.Dir, rerr)
		}
	}()
	progress, done := m.byteProgress("backup")
	man, err := backup.Write(snap, string(dir), datadir.BackupFiles, dest, time.Now(), progress)
	done()
	if err != nil {
		return fmt.Errorf("back up %s to %s: %w", dir, dest, err)
	}
	fmt.Fprintf(m.Stdout, "backed up %s to %s\n%s%s\ntip       seq %d, %s\ntree      size %d, root %s\n",
		dir, dest, chainLabel(dir), man.NodeDID, man.TipSeq, man.TipID, man.TreeSize, man.TreeRoot)
	return nil
}

// chainLabel heads the line that names whose chain dir holds, in the
// column of backup's and restore's reports: a mirror holds its origin's.
func chainLabel(dir datadir.Dir) string {
	if dir.IsMirror() {
		return "mirror of "
	}
	return "node      "
}
