package backup

import (
	"encoding/base64"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// A manifest names the tree its backup holds twice: as tree_size and
// tree_root, and as the node's signed checkpoint of that tree (on a mirror,
// the origin's). Restore holds the backup to both: CheckManifest, before
// anything is copied, that the checkpoint verifies with the key of the
// manifest's node and is of the tree the manifest names; checkTree, once the
// store is open, that the restored tree is that tree.

// CheckManifest checks what a manifest says of its tree against itself: its
// tree_size (at most MaxTreeSize and its tip_seq), its tree_root (32 bytes of
// standard base64) and its checkpoint, which must verify with the key of
// node_did and be of exactly that size and root. A disagreement is
// ErrManifest.
func CheckManifest(m Manifest) error {
	_, err := manifestTree(m)
	return err
}

// manifestTree is CheckManifest returning the tree the manifest names.
func manifestTree(m Manifest) (eventlog.TreeHead, error) {
	if err := eventlog.CheckTreeSize(m.TreeSize); err != nil || m.TreeSize < 1 || uint64(m.TreeSize) > m.TipSeq {
		return eventlog.TreeHead{}, fmt.Errorf("%w: its tree_size %d is not a tree of 1 to tip_seq %d events", ErrManifest, m.TreeSize, m.TipSeq)
	}
	raw, err := base64.StdEncoding.DecodeString(m.TreeRoot)
	if err != nil || len(raw) != len(tlog.Hash{}) {
		return eventlog.TreeHead{}, fmt.Errorf("%w: its tree_root %q is not 32 bytes in standard base64", ErrManifest, m.TreeRoot)
	}
	want := eventlog.TreeHead{Size: m.TreeSize, Root: tlog.Hash(raw)}
	pub, err := eventlog.PublicKeyFromDID(m.NodeDID)
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("%w: its node_did: %w", ErrManifest, err)
	}
	head, err := eventlog.OpenCheckpoint([]byte(m.Checkpoint), m.NodeDID, pub)
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("%w: its checkpoint is not one %s signed: %w", ErrManifest, m.NodeDID, err)
	}
	if head != want {
		return eventlog.TreeHead{}, fmt.Errorf("%w: its checkpoint is of the tree of %d events with root %s, its tree_size and tree_root say %d events with root %s",
			ErrManifest, head.Size, b64(head.Root), want.Size, b64(want.Root))
	}
	return want, nil
}

// checkTree holds the restored log l to the tree its manifest names: the
// root of l's tree of tree_size events must be tree_root. A node's backup
// is of the tree at its tip; a mirror's carries the origin's newest
// checkpoint it held, which may be of fewer events than its tip.
func checkTree(l *eventlog.Log, m Manifest) error {
	want, err := manifestTree(m)
	if err != nil {
		return err
	}
	if !l.ReadOnly() && uint64(want.Size) != m.TipSeq {
		return fmt.Errorf("%w: a node's backup is of the tree at its tip, seq %d, but its tree_size is %d", ErrManifest, m.TipSeq, want.Size)
	}
	root, err := l.TreeRoot(want.Size)
	if err != nil {
		return fmt.Errorf("the restored tree of %d events: %w", want.Size, err)
	}
	if root != want.Root {
		return fmt.Errorf("%w: the restored tree of %d events has root %s, its tree_root and checkpoint say %s",
			ErrManifest, want.Size, b64(root), b64(want.Root))
	}
	return nil
}

func b64(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }
