package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

func (m *Main) newBackupCommand(g *globals) *cobra.Command {
	var cfg tokenConfig
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
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.backup(cmd.Context(), cfg, args[0], logger)
		},
	}
	cmd.Flags().StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	cmd.Flags().StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "address HOST:PORT of the node running on --data-dir, used when its control.sock cannot be reached")
	return cmd
}

func (m *Main) backup(ctx context.Context, cfg tokenConfig, dest string, logger *slog.Logger) (err error) {
	dir, err := datadir.Resolve(cfg.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	if ents, err := os.ReadDir(dest); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s is not empty; give a new directory", dest)
	}
	snap, err := m.takeSnapshot(ctx, dir, cfg.addr, logger)
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

// takeSnapshot has the node running on dir take a snapshot of its store, or
// takes one itself when none runs.
func (m *Main) takeSnapshot(ctx context.Context, dir datadir.Dir, addr string, logger *slog.Logger) (backup.Snapshot, error) {
	chain, err := openChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		ch, err := openNodeChannel(ctx, dir, addr, logger)
		if err != nil {
			return backup.Snapshot{}, err
		}
		defer ch.Close()
		var v struct {
			SnapshotDir string `json:"snapshot_dir"`
			NodeDID     string `json:"node_did"`
			TipSeq      uint64 `json:"tip_seq"`
			TipID       string `json:"tip_id"`
			RootHash    string `json:"chain_root_hash"`
			Checkpoint  string `json:"checkpoint"`
		}
		if err := ch.Call(ctx, http.MethodPost, "/v1/admin/backup", struct{}{}, &v); err != nil {
			return backup.Snapshot{}, err
		}
		pub, err := eventlog.PublicKeyFromDID(v.NodeDID)
		if err != nil {
			return backup.Snapshot{}, fmt.Errorf("the node's snapshot: %w", err)
		}
		head, err := eventlog.OpenCheckpoint([]byte(v.Checkpoint), v.NodeDID, pub)
		if err != nil {
			return backup.Snapshot{}, fmt.Errorf("the node's snapshot: %w", err)
		}
		return backup.Snapshot{Dir: v.SnapshotDir, NodeDID: v.NodeDID, Backup: eventlog.Backup{
			Tip: eventlog.Tip{Seq: v.TipSeq, ID: v.TipID}, Root: v.RootHash, Tree: head, Checkpoint: []byte(v.Checkpoint),
		}}, nil
	}
	if err != nil {
		return backup.Snapshot{}, err
	}
	defer chain.Close()
	return snapshotStore(ctx, chain, dir, time.Now())
}

// snapshotStore takes a snapshot of chain's store inside dir and records it
// in the audit log; the node's admin endpoint and an offline backup share it.
func snapshotStore(ctx context.Context, chain *eventlog.Log, dir datadir.Dir, now time.Time) (backup.Snapshot, error) {
	snap, err := backup.TakeSnapshot(chain, string(dir), now)
	if err != nil {
		return backup.Snapshot{}, err
	}
	if _, err := chain.Audit(ctx, "backup.snapshot", chain.NodeDID(), map[string]any{
		"tip_seq": snap.Backup.Tip.Seq, "chain_tip_hash": snap.Backup.Tip.ID,
	}); err != nil {
		return backup.Snapshot{}, errors.Join(fmt.Errorf("audit backup.snapshot: %w", err), snap.Remove())
	}
	return snap, nil
}
