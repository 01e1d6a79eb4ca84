package transparency

import (
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// Verify checks p offline against k, the node's key as the checker trusts
// it, never p.VerifierKey: the checkpoint is k's signed note, tree_size and
// root_hash are the checkpoint's, the event hashes to its id and carries k's
// signature, it is p.Seq, and its leaf is in the checkpoint's tree by the
// inclusion path. It returns the checkpoint's tree head. It is what prove
// checked before it printed p, for whoever holds p and not the node.
func (p *Proof) Verify(k Key) (eventlog.TreeHead, error) {
	head, err := k.OpenCheckpoint([]byte(p.Checkpoint))
	if err != nil {
		return eventlog.TreeHead{}, err
	}
	if p.TreeSize != head.Size || p.RootHash != head.Root {
		return eventlog.TreeHead{}, fmt.Errorf("tree_size %d and root_hash %s are not the checkpoint's, %d and %s", p.TreeSize, p.RootHash, head.Size, B64(head.Root))
	}
	if p.Seq == 0 || p.Seq > uint64(head.Size) {
		return eventlog.TreeHead{}, fmt.Errorf("seq %d is not in the tree of %d events", p.Seq, head.Size)
	}
	id, err := checkEvent(p.Event, k, p.Seq)
	if err != nil {
		return eventlog.TreeHead{}, err
	}
	if p.EventID != hex.EncodeToString(id) {
		return eventlog.TreeHead{}, fmt.Errorf("event_id %s is not the event's id %x", p.EventID, id)
	}
	leaf := tlog.RecordHash(id)
	if p.LeafIndex != int64(p.Seq)-1 || p.LeafHash != leaf {
		return eventlog.TreeHead{}, fmt.Errorf("leaf_index %d and leaf_hash %s are not those of seq %d's event", p.LeafIndex, p.LeafHash, p.Seq)
	}
	if err := tlog.CheckRecord(p.Proof, head.Size, head.Root, p.LeafIndex, leaf); err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("the inclusion proof of seq %d does not lead to the checkpoint's root: %w", p.Seq, err)
	}
	return head, nil
}
