package http

import (
	"encoding/base64"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
)

// Snapshot is a copy of the store that a running node made for civnode backup:
// where it is, and the tip, root, tree and checkpoint it holds.
type Snapshot struct {
	Dir    string
	Backup eventlog.Backup
}

// snapshotView is the answer to POST /v1/admin/backup. The CLI copies the
// directory it names into the backup and then removes it.
type snapshotView struct {
	SnapshotDir string `json:"snapshot_dir"`
	NodeDID     string `json:"node_did"`
	TipSeq      uint64 `json:"tip_seq"`
	TipID       string `json:"tip_id"`
	RootHash    string `json:"chain_root_hash"`
	TreeSize    int64  `json:"tree_size"`
	TreeRoot    string `json:"tree_root"`
	Checkpoint  string `json:"checkpoint"`
}

// backupRoutes registers POST /v1/admin/backup, for the owner token only: it
// writes to the node's own data directory, and only the operator, who holds
// control.token, may make it do so.
func (s *Server) backupRoutes() {
	if s.snapshot == nil {
		return
	}
	s.handle(http.MethodPost, "/v1/admin/backup", s.handleBackup, routeOwner)
}

// handleBackup answers POST /v1/admin/backup {}.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := s.decodeJSON(w, r, &emptyRequest{}); err != nil {
		return err
	}
	snap, err := s.snapshot(r.Context())
	if err != nil {
		return err
	}
	b := snap.Backup
	return writeJSON(w, snapshotView{
		SnapshotDir: snap.Dir, NodeDID: s.log.NodeDID(), TipSeq: b.Tip.Seq, TipID: b.Tip.ID, RootHash: b.Root,
		TreeSize: b.Tree.Size, TreeRoot: base64.StdEncoding.EncodeToString(b.Tree.Root[:]), Checkpoint: string(b.Checkpoint),
	})
}
