package eventlog

import (
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// TreeHead is the Merkle tree at one size: its size in events and its root.
type TreeHead struct {
	Size int64
	Root tlog.Hash
}

// TreeSize is the size of the durable tree, the tip's seq.
func (l *Log) TreeSize() int64 { return int64(l.Tip().Seq) }

// TreeHead reads the tree at the durable tip. The root is read once per tip:
// a tree of n events costs about log2(n) stored hashes to hash.
func (l *Log) TreeHead() (TreeHead, error) {
	size := l.TreeSize()
	root, err := l.TreeRoot(size)
	if err != nil {
		return TreeHead{}, err
	}
	head := TreeHead{Size: size, Root: root}
	if c := l.treeCache.Load(); c == nil || c.head != head {
		l.cacheTreeHead(head, nil)
	}
	return head, nil
}

// TreeRoot is the root of the tree of the first size events, for any size up
// to the durable tip.
func (l *Log) TreeRoot(size int64) (tlog.Hash, error) {
	if err := l.checkTreeSize(size); err != nil {
		return tlog.Hash{}, err
	}
	if size == 0 {
		return tlog.Hash{}, fmt.Errorf("%w: a tree of 0 events has no root here", ErrBeyondTree)
	}
	// Most proofs are asked in the current tree, whose root is cached.
	if c := l.treeCache.Load(); c != nil && c.head.Size == size {
		return c.head.Root, nil
	}
	h, err := tlog.TreeHash(size, l.treeReader())
	if err != nil {
		return tlog.Hash{}, fmt.Errorf("hash the merkle tree of size %d: %w", size, err)
	}
	return h, nil
}

// LeafHash is the leaf of the event with seq: SHA-256(0x00 ‖ id).
func (l *Log) LeafHash(seq uint64) (tlog.Hash, error) {
	if seq == 0 || int64(seq) > l.TreeSize() {
		return tlog.Hash{}, fmt.Errorf("%w: no event with seq %d", ErrBeyondTree, seq)
	}
	hs, err := l.treeReader().ReadHashes([]int64{tlog.StoredHashIndex(0, int64(seq)-1)})
	if err != nil {
		return tlog.Hash{}, err
	}
	return hs[0], nil
}

// ProveInclusion is the RFC 9162 inclusion proof of the event with seq in the
// tree of size events (leaf index seq-1).
func (l *Log) ProveInclusion(seq uint64, size int64) (tlog.RecordProof, error) {
	if err := l.checkTreeSize(size); err != nil {
		return nil, err
	}
	if seq == 0 || int64(seq) > size {
		return nil, fmt.Errorf("%w: seq %d is not in a tree of %d events", ErrBeyondTree, seq, size)
	}
	p, err := tlog.ProveRecord(size, int64(seq)-1, l.treeReader())
	if err != nil {
		return nil, fmt.Errorf("prove seq %d in the tree of size %d: %w", seq, size, err)
	}
	return p, nil
}

// ProveConsistency is the RFC 9162 consistency proof that the tree of from
// events is a prefix of the tree of to events; empty when they are equal.
func (l *Log) ProveConsistency(from, to int64) (tlog.TreeProof, error) {
	if err := l.checkTreeSize(to); err != nil {
		return nil, err
	}
	if from <= 0 || from > to {
		return nil, fmt.Errorf("%w: no consistency proof from %d to %d", ErrBeyondTree, from, to)
	}
	p, err := tlog.ProveTree(to, from, l.treeReader())
	if err != nil {
		return nil, fmt.Errorf("prove the tree of size %d in the tree of size %d: %w", from, to, err)
	}
	return p, nil
}

// TileData is the content of a hash tile (C2SP tlog-tiles): its hashes, 32
// bytes each. A tile reaching past the durable tree is ErrBeyondTree; a full
// tile never changes, a partial one only grows into the full one.
func (l *Log) TileData(t tlog.Tile) ([]byte, error) {
	if t.L < 0 || t.H <= 0 || t.W <= 0 || t.W > 1<<t.H || t.N < 0 {
		return nil, fmt.Errorf("%w: tile %s", ErrBeyondTree, t.Path())
	}
	// The tile's last hash is node (L*H, N*2^H + W - 1), which exists once
	// the tree has that many complete nodes at that level.
	level := t.L * t.H
	if level >= 63 || t.N > (l.TreeSize()>>level)>>t.H {
		// Also keeps N<<H below from overflowing for an absurd N.
		return nil, fmt.Errorf("%w: tile %s", ErrBeyondTree, t.Path())
	}
	last := t.N<<t.H + int64(t.W) - 1
	if last > (l.TreeSize()>>level)-1 {
		return nil, fmt.Errorf("%w: tile %s", ErrBeyondTree, t.Path())
	}
	data, err := tlog.ReadTileData(t, l.treeReader())
	if err != nil {
		return nil, fmt.Errorf("read tile %s: %w", t.Path(), err)
	}
	return data, nil
}

// checkTreeSize refuses a size beyond the durable tree.
func (l *Log) checkTreeSize(size int64) error {
	if size < 0 || size > l.TreeSize() {
		return fmt.Errorf("%w: tree size %d, the tree has %d events", ErrBeyondTree, size, l.TreeSize())
	}
	return nil
}
