package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
)

// Snapshot has the node running on dir take a snapshot of its store, or
// takes one itself when none runs.
func Snapshot(ctx context.Context, dir datadir.Dir, addr string, logger *slog.Logger, opts ...localnode.DialOption) (backup.Snapshot, error) {
	chain, err := localnode.OpenChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		ch, err := localnode.Dial(ctx, dir, addr, logger, opts...)
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
	return backup.Take(ctx, chain, string(dir), time.Now())
}
