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
)

// backupCmd is civnode backup: a consistent copy of a node's data dir.
type backupCmd struct{ owner }

func newBackupCommand(m *Main, g *globals) *cobra.Command {
	c := &backupCmd{owner{m: m, g: g}}
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Copy a node's data dir, consistent at one tip, into a new directory",
		Long: `backup writes a consistent copy of a node's data dir to DIR, which must not
exist or be empty: the event log's store as Pebble's own checkpoint at one tip
(with the read models, indexes, Merkle tree and audit log of that tip), the
node key, the control token, the registry credential and the payment
accounts' keys (mode 0600), and manifest.json, written last, which names the
tip seq and id, the chain's root, the tree's size and root, and the node's
signed checkpoint of that tree.

It works on a running node, through its admin endpoint (control.sock, else
--addr once the node has proved it holds the data dir's key): the node takes
the checkpoint inside its data dir, holding its commits only for the time to
link the files, and backup copies it out. On a stopped node backup opens the
store itself.

  civnode backup /backups/node-$(date +%F) --data-dir ~/.civnode

Restore one with civnode restore (docs/operations.md).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd.Context(), args[0]) },
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
	snap, err := admin.Snapshot(ctx, dir, c.addr, logger)
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
	fmt.Fprintf(m.Stdout, "backed up %s to %s\nnode      %s\ntip       seq %d, %s\ntree      size %d, root %s\n",
		dir, dest, man.NodeDID, man.TipSeq, man.TipID, man.TreeSize, man.TreeRoot)
	return nil
}
